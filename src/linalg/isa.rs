//! Which instruction set the kernels run on: the best one this CPU has, or
//! the one named by the environment variable `BMRM_KERNELS` (read once).

use std::sync::OnceLock;

/// The instruction sets the kernels are compiled for. Every kernel gives the
/// same bits on all of them (see the module documentation of `linalg`), so
/// the choice changes speed only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// AVX-512 (F + VL) with FMA: 8 doubles per register.
    Avx512,
    /// AVX2 with FMA: 4 doubles per register.
    Avx2,
    /// The baseline of the target (SSE2 on x86-64; NEON on aarch64). Where
    /// the CPU has no fused multiply-add, `f64::mul_add` is computed in
    /// software: correct, same bits, much slower.
    Portable,
}

impl Isa {
    /// The lower-case name `BMRM_KERNELS` accepts.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx512 => "avx512",
            Isa::Avx2 => "avx2",
            Isa::Portable => "portable",
        }
    }

    /// Whether this CPU can run the kernels of `self`.
    pub fn supported(self) -> bool {
        match self {
            Isa::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => {
                Isa::Avx2.supported()
                    && std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512vl")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The instruction sets this CPU can run, best first.
    pub fn available() -> Vec<Isa> {
        [Isa::Avx512, Isa::Avx2, Isa::Portable]
            .into_iter()
            .filter(|i| i.supported())
            .collect()
    }

    fn parse(s: &str) -> Option<Isa> {
        match s.trim().to_ascii_lowercase().as_str() {
            "avx512" => Some(Isa::Avx512),
            "avx2" => Some(Isa::Avx2),
            "portable" => Some(Isa::Portable),
            _ => None,
        }
    }
}

static SELECTED: OnceLock<Isa> = OnceLock::new();

/// The instruction set every kernel of this process uses: `BMRM_KERNELS`
/// when it names one this CPU has, else the best the CPU has. A value that
/// is not `portable`, `avx2` or `avx512`, or names an instruction set the
/// CPU lacks, is reported once on standard error and the portable kernels
/// are used (the same bits, so nothing but speed depends on it).
pub fn selected() -> Isa {
    *SELECTED.get_or_init(|| {
        let best = Isa::available()[0];
        match std::env::var("BMRM_KERNELS") {
            Err(_) => best,
            Ok(v) => match Isa::parse(&v) {
                Some(isa) if isa.supported() => isa,
                Some(isa) => {
                    eprintln!(
                        "bmrm: BMRM_KERNELS={v}: this CPU lacks {}; using the portable kernels",
                        isa.name()
                    );
                    Isa::Portable
                }
                None => {
                    eprintln!(
                        "bmrm: BMRM_KERNELS={v} is not one of portable, avx2, avx512; using the \
                         portable kernels"
                    );
                    Isa::Portable
                }
            },
        }
    })
}
