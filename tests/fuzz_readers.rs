//! A mutation fuzzer over small valid files of every reader format (LIBSVM,
//! OCR, CoNLL, IDX; plain and gzipped), through the library's reader
//! functions in this process. Every case must end in a successful read or an
//! `InvalidArgument` that names the file and a location, never in a panic,
//! and no single allocation may exceed [`MAX_ALLOCATION`] (a counting global
//! allocator watches), so a hostile header cannot make a reader ask for
//! gigabytes.
//!
//! Settings (environment): `BMRM_FUZZ_SEED` (default 1) and
//! `BMRM_FUZZ_CASES` (default 50000, shared among the formats). The long run
//! of docs/reliability.md sets them.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use bmrm::data::{conll, idx, libsvm, ocr};
use bmrm::Error;

/// The largest single allocation a reader may make for these small inputs.
const MAX_ALLOCATION: usize = 16 << 20;

/// The system allocator, remembering this thread's largest request.
struct Counting;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = LARGEST.try_with(|l| {
        if size > l.get() {
            l.set(size)
        }
    });
}

// SAFETY: every call is forwarded to `System` with the caller's arguments;
// only a thread-local counter (no allocation) is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

// ---------------------------------------------------------------------------
// The seeds: one small valid file per format.

fn libsvm_seed() -> Vec<u8> {
    b"2 1:0.5 3:1 # a comment\n-1 2:2.5\n\n2 qid:7 1:1 4:-3e-2\n7 2:1\n".to_vec()
}

fn ocr_seed() -> Vec<u8> {
    let words = [("ab", 0), ("c", 3), ("zed", 1)];
    let mut out = String::new();
    let mut id = 1;
    for (w, (word, fold)) in words.iter().enumerate() {
        for (p, ch) in word.chars().enumerate() {
            let next = if p + 1 == word.len() {
                -1
            } else {
                id as i64 + 1
            };
            let mut fields = vec![
                id.to_string(),
                ch.to_string(),
                next.to_string(),
                (w + 1).to_string(),
                (p + 1).to_string(),
                fold.to_string(),
            ];
            fields.extend((0..ocr::OCR_PIXELS).map(|j| u8::from((id + j) % 3 == 0).to_string()));
            out.push_str(&fields.join("\t"));
            out.push('\n');
            id += 1;
        }
    }
    out.into_bytes()
}

fn conll_seed() -> Vec<u8> {
    b"# sentence\tlabel\ta0\ta1\ta2\n0\t1\t1\t0\t2\n0\t3\t2\t1\t0\n1\t23\t0\t0\t1\n4\t2\t3\t1\t2\n"
        .to_vec()
}

fn idx_seed(images: bool) -> Vec<u8> {
    let mut out = vec![0, 0, 8];
    if images {
        out.push(3);
        for d in [3u32, 2, 2] {
            out.extend(d.to_be_bytes());
        }
        out.extend((0..12u8).map(|i| i * 20));
    } else {
        out.push(1);
        out.extend(3u32.to_be_bytes());
        out.extend([1u8, 0, 9]);
    }
    out
}

// ---------------------------------------------------------------------------
// Mutations.

/// Tokens that reach the readers' edge cases.
const TOKENS: &[&[u8]] = &[
    b"4294967295",
    b"4294967296",
    b"18446744073709551615",
    b"100000000",
    b"-1",
    b"0",
    b"1e309",
    b"nan",
    b"inf",
    b"\t",
    b"\n",
    b"\r\n",
    b" ",
    b":",
    b"#",
    b"qid:",
    b"\xff",
    b"\xc3",
    b"\0",
    b"\xff\xff\xff\xff",
    b"\x7f\xff\xff\xff",
];

fn mutate(rng: &mut ChaCha8Rng, seed: &[u8]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for _ in 0..rng.gen_range(1..=4) {
        let len = b.len();
        let at = if len == 0 { 0 } else { rng.gen_range(0..len) };
        match rng.gen_range(0..7) {
            0 if len > 0 => b[at] ^= 1 << rng.gen_range(0..8),
            1 if len > 0 => b[at] = rng.gen(),
            2 => b.insert(at, rng.gen()),
            3 if len > 0 => {
                let end = (at + rng.gen_range(1..=16)).min(len);
                b.drain(at..end);
            }
            4 if len > 0 => {
                let end = (at + rng.gen_range(1..=32)).min(len);
                let piece = b[at..end].to_vec();
                let to = rng.gen_range(0..=b.len());
                b.splice(to..to, piece);
            }
            5 => {
                let t = TOKENS[rng.gen_range(0..TOKENS.len())];
                if len > 0 && rng.gen_bool(0.5) {
                    let end = (at + t.len()).min(len);
                    b.splice(at..end, t.iter().copied());
                } else {
                    b.splice(at..at, t.iter().copied());
                }
            }
            _ => b.truncate(at),
        }
    }
    if rng.gen_bool(0.2) {
        let gz = gzip(&b);
        // A gzip stream cut short or with a flipped byte, now and then.
        let mut gz = if rng.gen_bool(0.3) {
            let cut = rng.gen_range(0..gz.len());
            gz[..cut].to_vec()
        } else {
            gz
        };
        if rng.gen_bool(0.3) && gz.len() > 10 {
            let i = rng.gen_range(10..gz.len());
            gz[i] ^= 0x55;
        }
        return gz;
    }
    b
}

// ---------------------------------------------------------------------------
// The run.

/// Errors about the whole file (its location is the file itself).
const WHOLE_FILE: &[&str] = &[
    "no examples",
    "no tokens",
    "no letters",
    "do not fit 32-bit indices",
];

/// What one format's reader gives for a file: Ok, or its error.
type Reader = fn(&Path, &[u8]) -> Result<(), Error>;

fn read_libsvm(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    // The in-memory parser, and the file reader (which gunzips).
    let _ = libsvm::parse(bytes, &path.display().to_string());
    libsvm::read(path).map(drop)
}
fn read_ocr(path: &Path, _: &[u8]) -> Result<(), Error> {
    ocr::read_ocr(path).map(drop)
}
fn read_conll(path: &Path, _: &[u8]) -> Result<(), Error> {
    conll::read_conll(path).map(drop)
}
fn read_idx(path: &Path, _: &[u8]) -> Result<(), Error> {
    idx::read_idx_u8(path, None)?;
    idx::load_images(path, Some(2)).map(drop).or_else(|e| {
        // A labels file is not an images file: also an error with the path.
        idx::load_labels(path, None).map(drop).map_err(|_| e)
    })
}

#[test]
fn mutated_files_give_a_read_or_a_located_error_never_a_panic_or_a_huge_allocation() {
    let seed = setting("BMRM_FUZZ_SEED", 1);
    let cases = setting("BMRM_FUZZ_CASES", 50_000);
    let formats: [(&str, Vec<u8>, Reader, &str); 5] = [
        ("libsvm", libsvm_seed(), read_libsvm, "line "),
        ("ocr", ocr_seed(), read_ocr, "line "),
        ("conll", conll_seed(), read_conll, "line "),
        ("idx-images", idx_seed(true), read_idx, "IDX file"),
        ("idx-labels", idx_seed(false), read_idx, "IDX file"),
    ];
    // In memory when the system has a tmpfs: the cases are many small files.
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm)
    } else {
        tempfile::tempdir()
    }
    .unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut seconds = [0.0f64; 5];
    let (mut ok, mut errors, mut failures) = (0u64, 0u64, Vec::new());
    let started = std::time::Instant::now();
    for case in 0..cases {
        let which = (case % formats.len() as u64) as usize;
        let (name, good, read, location) = &formats[which];
        let t = std::time::Instant::now();
        let bytes = mutate(&mut rng, good);
        let path = dir.path().join(format!("{name}-case"));
        std::fs::write(&path, &bytes).unwrap();
        LARGEST.with(|l| l.set(0));
        let outcome = catch_unwind(AssertUnwindSafe(|| read(&path, &bytes)));
        let largest = LARGEST.with(Cell::get);
        seconds[which] += t.elapsed().as_secs_f64();
        let bad = match outcome {
            Err(_) => Some("panicked".to_string()),
            Ok(Ok(())) => {
                ok += 1;
                None
            }
            Ok(Err(Error {
                kind: bmrm::ErrorKind::InvalidArgument,
                message: m,
                ..
            })) => {
                errors += 1;
                let named = m.contains(&path.display().to_string());
                let located = m.contains(location) || WHOLE_FILE.iter().any(|w| m.contains(w));
                (!named || !located).then(|| format!("error without a location: {m}"))
            }
            Ok(Err(e)) => Some(format!("not InvalidArgument: {e:?}")),
        };
        let bad = bad.or_else(|| {
            (largest > MAX_ALLOCATION).then(|| format!("allocated {largest} bytes at once"))
        });
        if let Some(why) = bad {
            if failures.len() < 40 {
                failures.push(format!(
                    "seed {seed} case {case} ({name}): {why}; input {:?}",
                    String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
                ));
            }
        }
    }
    println!(
        "FUZZ seed {seed}: {cases} cases in {:.1} s: {ok} read, {errors} located errors; \
         seconds per format {seconds:.1?}",
        started.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        ok > 0 && errors > 0,
        "the mutations never (or always) broke the files"
    );
}
