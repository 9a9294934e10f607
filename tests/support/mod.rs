//! Building and running programs against the library, for the front-end
//! tests (tests/ffi.rs, tests/cpp.rs, tests/octave.rs): where libbmrm.a is, compiling
//! with the system compilers, running with the output kept for failures.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn shared_lib_name() -> &'static str {
    if cfg!(target_os = "macos") {
        "libbmrm.dylib"
    } else {
        "libbmrm.so"
    }
}

/// The system libraries a static libbmrm needs (rustc's native-static-libs).
pub fn static_lib_deps() -> Vec<&'static str> {
    if cfg!(target_os = "macos") {
        vec!["-lSystem", "-lc", "-lm"]
    } else {
        vec![
            "-lgcc_s",
            "-lutil",
            "-lrt",
            "-lpthread",
            "-lm",
            "-ldl",
            "-lc",
        ]
    }
}

/// The compiler named by the environment variable `var` (CC, CXX), else
/// `default`.
pub fn compiler(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.into())
}

/// The flags of every C and C++ test program after the language standard
/// `std`: warnings are errors, and no FMA contraction, so that the programs
/// compute what the Rust side does to the bit.
pub fn strict_flags(std: &'static str) -> Vec<&'static str> {
    vec![
        std,
        "-O1",
        "-g",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pedantic",
        "-ffp-contract=off",
        "-pthread",
    ]
}

/// The compiler arguments that build `source` (relative to the root) against
/// the static library: `-I` for each of `includes`, the source, libbmrm.a
/// and the system libraries it needs.
pub fn static_link_args(includes: &[&str], source: &str) -> Vec<String> {
    let mut args: Vec<String> = includes
        .iter()
        .map(|d| format!("-I{}", path_arg(&root().join(d))))
        .collect();
    args.push(path_arg(&root().join(source)));
    args.push(path_arg(&lib_dir().join("libbmrm.a")));
    args.extend(static_lib_deps().iter().map(|s| s.to_string()));
    args
}

/// The directory holding `libbmrm.a` built from the same sources as this
/// test: cargo builds every crate type of the library into
/// `target/<profile>/deps` for the tests. Falls back to building them.
pub fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test executable's path");
        let deps = exe.parent().expect("deps dir").to_path_buf();
        let profile_dir = deps.parent().expect("profile dir").to_path_buf();
        let has_libs =
            |d: &Path| d.join("libbmrm.a").exists() && d.join(shared_lib_name()).exists();
        if has_libs(&deps) {
            return deps;
        }
        let profile = profile_dir
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cargo.args(["build", "--lib"]).current_dir(root());
        match profile.as_str() {
            "debug" => {}
            "release" => {
                cargo.arg("--release");
            }
            other => {
                cargo.args(["--profile", other]);
            }
        }
        let target = profile_dir.parent().expect("target dir");
        let status = cargo
            .env("CARGO_TARGET_DIR", target)
            .status()
            .expect("cargo runs");
        assert!(status.success(), "cargo build --lib failed");
        assert!(
            has_libs(&profile_dir),
            "no libbmrm in {}",
            profile_dir.display()
        );
        profile_dir
    })
}

/// A build directory `target/<profile>/<name>`.
pub fn work_dir(name: &str) -> PathBuf {
    let dir = lib_dir()
        .ancestors()
        .find(|d| d.join("deps").is_dir())
        .unwrap_or(lib_dir())
        .join(name);
    std::fs::create_dir_all(&dir).expect("create the build directory");
    dir
}

pub fn path_arg(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Whether `program --version` runs.
pub fn has_program(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Runs a command, failing the test with its output when it fails.
pub fn run_ok(cmd: &mut Command, what: &str) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start {:?}: {e}", cmd.get_program()));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Compiles with `compiler` and `flags` + `args` into `dir/name`
/// (atomically: concurrent test runs never see a half-written program).
pub fn compile(compiler: &str, flags: &[&str], args: &[String], dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    let tmp = dir.join(format!("{name}.{}.tmp", std::process::id()));
    let mut cmd = Command::new(compiler);
    cmd.args(flags).args(args).arg("-o").arg(&tmp);
    run_ok(&mut cmd, &format!("compiling {name}"));
    std::fs::rename(&tmp, &out).expect("rename the compiled program");
    out
}

/// Runs `program` under valgrind's memcheck: no error, no definite leak.
/// Returns the summary lines.
pub fn valgrind(program: &Path) -> String {
    let out = run_ok(
        Command::new("valgrind")
            .args([
                "--tool=memcheck",
                "--error-exitcode=1",
                "--leak-check=full",
                "--errors-for-leak-kinds=definite",
                "--show-leak-kinds=definite",
            ])
            .arg(format!(
                "--suppressions={}",
                path_arg(&root().join("tests/c/valgrind.supp"))
            ))
            .arg(program),
        &format!("valgrind {}", program.display()),
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        stderr.contains("ERROR SUMMARY: 0 errors"),
        "valgrind found errors in {}:\n{stderr}",
        program.display()
    );
    stderr
        .lines()
        .filter(|l| {
            l.contains("ERROR SUMMARY")
                || l.contains("definitely lost")
                || l.contains("possibly lost")
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The README's one fenced code block in language `lang` (```` ```c ````,
/// ```` ```cpp ````, ...): the front ends' tests compile and run them, so the
/// README cannot drift from the library.
pub fn readme_block(lang: &str) -> String {
    let text = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let fence = format!("```{lang}\n");
    let blocks: Vec<&str> = text
        .split(fence.as_str())
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap_or_default())
        .collect();
    assert_eq!(
        blocks.len(),
        1,
        "README.md should hold exactly one ```{lang} block"
    );
    blocks[0].to_owned()
}
