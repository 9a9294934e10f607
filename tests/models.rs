//! The built-in models against brute force, their input validation, the
//! synthetic generators, and the IDX reader (on files written here and on the
//! real Fashion-MNIST files when they are installed).

use std::io::Write;
use std::path::{Path, PathBuf};

use bmrm::data::idx;
use bmrm::models::{synthetic, BinaryHinge, Multiclass};
use bmrm::oracle::{Corner, MaxOracle};
use bmrm::Error;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

// ---------------------------------------------------------------------------
// helpers

/// psi of a corner as a dense vector (sparse entries and dense part added up).
fn dense_psi(c: &Corner) -> Vec<f64> {
    let mut v = vec![0.0; c.dim()];
    c.add_to(1.0, &mut v);
    v
}

/// phi(x, y) of the multiclass model, built by hand: (x, 1) in block y.
fn phi(x: &[f32], y: usize, k: usize, bias: bool) -> Vec<f64> {
    let dp = x.len() + usize::from(bias);
    let mut v = vec![0.0; k * dp];
    for (j, &xj) in x.iter().enumerate() {
        v[y * dp + j] = f64::from(xj);
    }
    if bias {
        v[y * dp + x.len()] = 1.0;
    }
    v
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn call(o: &dyn MaxOracle, i: usize, w: &[f64]) -> Corner {
    let mut c = Corner::new(o.dim());
    o.max_oracle(i, w, &mut c).expect("oracle call");
    c
}

/// A random multiclass problem; with `integer` the features and weights are
/// small integers (some zero), so that exact ties happen often.
fn random_multiclass(
    rng: &mut ChaCha8Rng,
    m: usize,
    d: usize,
    k: usize,
    bias: bool,
    integer: bool,
) -> (Multiclass, Vec<f64>) {
    let draw = |rng: &mut ChaCha8Rng| -> f64 {
        if integer {
            f64::from(rng.gen_range(-2i32..=2))
        } else if rng.gen_bool(0.3) {
            0.0
        } else {
            rng.gen_range(-1.5..1.5)
        }
    };
    let x: Vec<f32> = (0..m * d).map(|_| draw(rng) as f32).collect();
    let y: Vec<usize> = (0..m).map(|_| rng.gen_range(0..k)).collect();
    let model = Multiclass::new(x, d, y, k, bias).unwrap();
    let w: Vec<f64> = (0..model.dim()).map(|_| draw(rng)).collect();
    (model, w)
}

// ---------------------------------------------------------------------------
// multiclass

/// The oracle equals enumeration of all K labels: the argmax with the tie
/// rule, the loss, psi = phi(y_i) - phi(y^) and the hinge value.
#[test]
fn multiclass_oracle_matches_brute_force() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut ties_with_truth = 0;
    let mut ties_among_others = 0;
    for trial in 0..400 {
        let k = rng.gen_range(2..6);
        let d = rng.gen_range(1..7);
        let bias = trial % 2 == 0;
        let integer = trial % 4 < 2;
        let (model, w) = random_multiclass(&mut rng, 5, d, k, bias, integer);
        assert_eq!(model.dim(), k * (d + usize::from(bias)));
        assert_eq!(model.block_dim(), d + usize::from(bias));
        for i in 0..model.num_examples() {
            let x = model.example(i);
            let yi = model.labels()[i];
            let scores: Vec<f64> = (0..k)
                .map(|y| f64::from(u8::from(y != yi)) + dot(&w, &phi(x, y, k, bias)))
                .collect();
            let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let winners: Vec<usize> = (0..k).filter(|&y| scores[y] == max).collect();
            let expect = if winners.contains(&yi) {
                yi
            } else {
                winners[0]
            };
            if winners.len() > 1 {
                if winners.contains(&yi) {
                    ties_with_truth += 1;
                } else {
                    ties_among_others += 1;
                }
            }
            let hinge = max - scores[yi];

            let c = call(&model, i, &w);
            assert_eq!(c.label(), expect as u64, "trial {trial} example {i}");
            assert_eq!(c.loss(), f64::from(u8::from(expect != yi)));
            let psi: Vec<f64> = phi(x, yi, k, bias)
                .iter()
                .zip(&phi(x, expect, k, bias))
                .map(|(a, b)| a - b)
                .collect();
            assert_eq!(dense_psi(&c), psi, "trial {trial} example {i}");
            assert!(
                (c.hinge(&w) - hinge).abs() <= 1e-12,
                "trial {trial}: {} vs {hinge}",
                c.hinge(&w)
            );
            assert!(hinge >= 0.0);
            if expect == yi {
                assert_eq!(c.sparse_entries().count(), 0, "psi = 0 reported as nothing");
            }
        }
    }
    // The integer trials must actually exercise both tie rules.
    assert!(ties_with_truth > 20, "{ties_with_truth}");
    assert!(ties_among_others > 20, "{ties_among_others}");
}

#[test]
fn multiclass_at_zero_picks_lowest_other_class() {
    let x = vec![1.0f32, 2.0, 0.5, -1.0, 3.0, 0.0];
    let model = Multiclass::new(x, 2, vec![0, 1, 2], 3, true).unwrap();
    let w = vec![0.0; model.dim()];
    let got: Vec<u64> = (0..3).map(|i| call(&model, i, &w).label()).collect();
    assert_eq!(got, vec![1, 0, 0]);
    for i in 0..3 {
        let c = call(&model, i, &w);
        assert_eq!(c.loss(), 1.0);
        assert_eq!(c.hinge(&w), 1.0);
    }
    // Mean risk at 0 is 1; predict picks class 0 on ties.
    assert_eq!(model.predict(&w, &[5.0, 5.0]), 0);
    assert!((model.error_rate(&w) - 2.0 / 3.0).abs() < 1e-15);
}

#[test]
fn multiclass_predict_and_error_rate() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for bias in [false, true] {
        let (model, w) = random_multiclass(&mut rng, 50, 4, 3, bias, false);
        let mut wrong = 0;
        for i in 0..50 {
            let x = model.example(i);
            let scores: Vec<f64> = (0..3).map(|y| dot(&w, &phi(x, y, 3, bias))).collect();
            let best = (0..3).fold(0, |b, y| if scores[y] > scores[b] { y } else { b });
            assert_eq!(model.predict(&w, x), best);
            wrong += usize::from(best != model.labels()[i]);
        }
        assert_eq!(model.error_rate(&w), wrong as f64 / 50.0);
    }
}

#[test]
fn multiclass_validation() {
    let bad = |r: bmrm::Result<Multiclass>| r.unwrap_err();
    // features.len() != m * d
    let e = bad(Multiclass::new(vec![0.0; 5], 2, vec![0, 1, 0], 2, false));
    assert!(
        matches!(
            e,
            Error {
                kind: bmrm::ErrorKind::DimensionMismatch,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("5 feature values"), "{e}");
    // label out of range
    let e = bad(Multiclass::new(vec![0.0; 6], 2, vec![0, 3, 0], 3, false));
    assert!(
        matches!(
            e,
            Error {
                kind: bmrm::ErrorKind::InvalidArgument,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("label 3 of example 1"), "{e}");
    // too few classes, d = 0, no examples, non-finite feature
    let e = bad(Multiclass::new(vec![0.0; 2], 2, vec![0], 1, false));
    assert!(
        matches!(
            e,
            Error {
                kind: bmrm::ErrorKind::InvalidArgument,
                ..
            }
        ) && e.to_string().contains("num_classes")
    );
    let e = bad(Multiclass::new(vec![], 0, vec![0], 2, false));
    assert!(
        matches!(
            e,
            Error {
                kind: bmrm::ErrorKind::InvalidArgument,
                ..
            }
        ) && e.to_string().contains("d must")
    );
    let e = bad(Multiclass::new(vec![], 3, vec![], 2, false));
    assert!(
        matches!(
            e,
            Error {
                kind: bmrm::ErrorKind::InvalidArgument,
                ..
            }
        ) && e.to_string().contains("example")
    );
    let e = bad(Multiclass::new(
        vec![0.0, f32::NAN],
        1,
        vec![0, 1],
        2,
        false,
    ));
    assert!(matches!(
        e,
        Error {
            kind: bmrm::ErrorKind::InvalidArgument,
            ..
        }
    ));
    assert!(e.to_string().contains("example 1"), "{e}");

    // bad calls of the oracle
    let model = Multiclass::new(vec![1.0, 2.0], 1, vec![0, 1], 2, true).unwrap();
    let mut c = Corner::new(model.dim());
    let e = model.max_oracle(0, &[0.0; 3], &mut c).unwrap_err();
    assert!(
        matches!(
            e,
            Error {
                kind: bmrm::ErrorKind::DimensionMismatch,
                ..
            }
        ),
        "{e}"
    );
    let e = model.max_oracle(2, &[0.0; 4], &mut c).unwrap_err();
    assert!(
        matches!(
            e,
            Error {
                kind: bmrm::ErrorKind::InvalidArgument,
                ..
            }
        ) && e.to_string().contains("example 2")
    );
    let e = model
        .max_oracle(0, &[0.0, f64::NAN, 0.0, 0.0], &mut c)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error {
                kind: bmrm::ErrorKind::NonFinite,
                ..
            }
        ),
        "{e}"
    );
}

// ---------------------------------------------------------------------------
// binary

#[test]
fn binary_oracle_is_the_hinge() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for trial in 0..200 {
        let d = rng.gen_range(1..6);
        let m = 6;
        let bias = trial % 2 == 1;
        let integer = trial % 3 == 0;
        let draw = |rng: &mut ChaCha8Rng| -> f64 {
            if integer {
                f64::from(rng.gen_range(-1i32..=1))
            } else {
                rng.gen_range(-1.0..1.0)
            }
        };
        let x: Vec<f32> = (0..m * d).map(|_| draw(&mut rng) as f32).collect();
        let y: Vec<f64> = (0..m)
            .map(|_| if rng.gen_bool(0.5) { 1.0 } else { -1.0 })
            .collect();
        let model = BinaryHinge::new(x, d, y.clone(), bias).unwrap();
        assert_eq!(model.dim(), d + usize::from(bias));
        let w: Vec<f64> = (0..model.dim()).map(|_| draw(&mut rng)).collect();
        for (i, &yi) in y.iter().enumerate() {
            let mut xe: Vec<f64> = model.example(i).iter().map(|&v| f64::from(v)).collect();
            if bias {
                xe.push(1.0);
            }
            let margin = yi * dot(&w, &xe);
            let h = (1.0 - margin).max(0.0);
            let c = call(&model, i, &w);
            assert!((c.hinge(&w) - h).abs() <= 1e-12, "{} vs {h}", c.hinge(&w));
            let violated = 1.0 - margin > 0.0;
            let yhat = if violated { -yi } else { yi };
            assert_eq!(c.label(), u64::from(yhat > 0.0));
            assert_eq!(c.loss(), f64::from(u8::from(violated)));
            let psi: Vec<f64> = if violated {
                xe.iter().map(|v| yi * v).collect()
            } else {
                vec![0.0; xe.len()]
            };
            assert_eq!(dense_psi(&c), psi);
        }
        // predict / error rate
        let wrong = (0..m)
            .filter(|&i| {
                let p = if model.decision_value(&w, model.example(i)) >= 0.0 {
                    1.0
                } else {
                    -1.0
                };
                p != y[i]
            })
            .count();
        assert_eq!(model.error_rate(&w), wrong as f64 / m as f64);
    }
}

#[test]
fn binary_validation() {
    let e = BinaryHinge::new(vec![0.0; 4], 2, vec![1.0, 0.5], false).unwrap_err();
    assert!(matches!(
        e,
        Error {
            kind: bmrm::ErrorKind::InvalidArgument,
            ..
        }
    ));
    assert!(e.to_string().contains("label 0.5 of example 1"), "{e}");
    let e = BinaryHinge::new(vec![0.0; 3], 2, vec![1.0, -1.0], false).unwrap_err();
    assert!(
        matches!(
            e,
            Error {
                kind: bmrm::ErrorKind::DimensionMismatch,
                ..
            }
        ),
        "{e}"
    );
    let e = BinaryHinge::new(vec![], 2, vec![], true).unwrap_err();
    assert!(
        matches!(
            e,
            Error {
                kind: bmrm::ErrorKind::InvalidArgument,
                ..
            }
        ),
        "{e}"
    );
    let model = BinaryHinge::new(vec![1.0, 2.0], 2, vec![1.0], true).unwrap();
    let mut c = Corner::new(3);
    let e = model.max_oracle(0, &[0.0; 2], &mut c).unwrap_err();
    assert!(
        matches!(
            e,
            Error {
                kind: bmrm::ErrorKind::DimensionMismatch,
                ..
            }
        ),
        "{e}"
    );
    let e = model
        .max_oracle(0, &[f64::INFINITY, 0.0, 0.0], &mut c)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error {
                kind: bmrm::ErrorKind::NonFinite,
                ..
            }
        ),
        "{e}"
    );
}

// ---------------------------------------------------------------------------
// synthetic data

/// Nearest-class-mean weights (w_k = mu_k, bias -||mu_k||^2/2) from the data.
fn nearest_mean_weights(x: &[f32], y: &[usize], d: usize, k: usize) -> Vec<f64> {
    let mut mu = vec![0.0; k * d];
    let mut n = vec![0usize; k];
    for (i, &c) in y.iter().enumerate() {
        n[c] += 1;
        for j in 0..d {
            mu[c * d + j] += f64::from(x[i * d + j]);
        }
    }
    let mut w = vec![0.0; k * (d + 1)];
    for c in 0..k {
        let mut norm2 = 0.0;
        for j in 0..d {
            let v = mu[c * d + j] / n[c] as f64;
            w[c * (d + 1) + j] = v;
            norm2 += v * v;
        }
        w[c * (d + 1) + d] = -norm2 / 2.0;
    }
    w
}

#[test]
fn synthetic_multiclass() {
    let (m, d, k) = (600, 10, 4);
    let (x, y) = synthetic::gaussian_multiclass(m, d, k, 3.0, 7);
    assert_eq!(x.len(), m * d);
    assert_eq!(y.len(), m);
    for c in 0..k {
        assert_eq!(y.iter().filter(|&&l| l == c).count(), m / k);
    }
    let (x2, y2) = synthetic::gaussian_multiclass(m, d, k, 3.0, 7);
    assert_eq!((x.clone(), y.clone()), (x2, y2), "same seed, same data");
    let (x3, _) = synthetic::gaussian_multiclass(m, d, k, 3.0, 8);
    assert_ne!(x, x3, "another seed, other data");

    // Well separated: the class means classify well; separation 0: they don't,
    // and no linear rule can (the classes have the same distribution).
    let err = |sep: f64| {
        let (x, y) = synthetic::gaussian_multiclass(m, d, k, sep, 11);
        let w = nearest_mean_weights(&x, &y, d, k);
        Multiclass::new(x, d, y, k, true).unwrap().error_rate(&w)
    };
    assert!(err(8.0) < 0.02, "{}", err(8.0));
    assert!(err(0.0) > 0.5, "{}", err(0.0));
    let mid = err(2.0);
    assert!(mid > 0.05 && mid < 0.6, "{mid}");
}

#[test]
fn synthetic_binary() {
    let (m, d) = (1000, 5);
    let (x, y) = synthetic::gaussian_binary(m, d, 2.0, 5);
    assert_eq!(x.len(), m * d);
    assert_eq!(y.iter().filter(|&&l| l == 1.0).count(), m / 2);
    assert!(y.iter().all(|&l| l == 1.0 || l == -1.0));
    assert_eq!(
        synthetic::gaussian_binary(m, d, 2.0, 5),
        (x.clone(), y.clone())
    );
    // The difference of the empirical class means as w: error near the Bayes
    // error Phi(-1) = 0.159.
    let mut w = vec![0.0; d + 1];
    for i in 0..m {
        for j in 0..d {
            w[j] += y[i] * f64::from(x[i * d + j]) / (m / 2) as f64;
        }
    }
    let model = BinaryHinge::new(x, d, y, true).unwrap();
    let e = model.error_rate(&w);
    assert!(e > 0.1 && e < 0.22, "{e}");
}

// ---------------------------------------------------------------------------
// IDX

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let p =
            std::env::temp_dir().join(format!("bmrm-test-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The bytes of an IDX file of unsigned bytes, built by hand.
fn idx_bytes(dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut b = vec![0, 0, 0x08, dims.len() as u8];
    for d in dims {
        b.extend_from_slice(&d.to_be_bytes());
    }
    b.extend_from_slice(data);
    b
}

fn write_file(path: &Path, bytes: &[u8], gzip: bool) {
    let mut f = std::fs::File::create(path).unwrap();
    if gzip {
        let mut enc = flate2::write::GzEncoder::new(f, flate2::Compression::default());
        enc.write_all(bytes).unwrap();
        enc.finish().unwrap();
    } else {
        f.write_all(bytes).unwrap();
    }
}

fn tiny_images() -> (Vec<u8>, Vec<u8>) {
    // 3 images of 2 x 4 pixels, labels 7, 0, 9
    let pixels: Vec<u8> = (0..24).map(|v| (v * 11) as u8).collect();
    (pixels, vec![7, 0, 9])
}

#[test]
fn idx_round_trip_plain_and_gzipped() {
    let dir = TempDir::new("idx");
    let (pixels, labels) = tiny_images();
    for gzip in [false, true] {
        let suffix = if gzip { ".gz" } else { "" };
        let ip = dir.path(&format!("img{suffix}"));
        let lp = dir.path(&format!("lab{suffix}"));
        write_file(&ip, &idx_bytes(&[3, 2, 4], &pixels), gzip);
        write_file(&lp, &idx_bytes(&[3], &labels), gzip);

        let im = idx::load_images(&ip, None).unwrap();
        assert_eq!((im.count, im.rows, im.cols), (3, 2, 4));
        assert_eq!(im.pixels, pixels);
        assert_eq!(im.image(1), &pixels[8..16]);
        assert_eq!(idx::load_labels(&lp, None).unwrap(), labels);

        // A prefix only.
        let im2 = idx::load_images(&ip, Some(2)).unwrap();
        assert_eq!(im2.count, 2);
        assert_eq!(im2.pixels, pixels[..16]);
        assert_eq!(idx::load_labels(&lp, Some(10)).unwrap(), labels);

        let a = idx::read_idx_u8(&ip, None).unwrap();
        assert_eq!(a.dims, vec![3, 2, 4]);
    }
    // gzip content without the .gz name is detected by its magic bytes
    let p = dir.path("sneaky");
    write_file(&p, &idx_bytes(&[3], &labels), true);
    assert_eq!(idx::load_labels(&p, None).unwrap(), labels);
}

#[test]
fn idx_errors_name_the_file() {
    let dir = TempDir::new("idx-err");
    let (pixels, _) = tiny_images();
    let check = |path: &Path, needle: &str| {
        let e = idx::load_images(path, None).unwrap_err();
        assert!(
            matches!(
                e,
                Error {
                    kind: bmrm::ErrorKind::InvalidArgument,
                    ..
                }
            ),
            "{e}"
        );
        let msg = e.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(msg.contains(needle), "{msg}");
    };
    for gzip in [false, true] {
        let suffix = if gzip { ".gz" } else { "" };
        // data cut short
        let mut b = idx_bytes(&[3, 2, 4], &pixels);
        b.truncate(b.len() - 5);
        let p = dir.path(&format!("truncated{suffix}"));
        write_file(&p, &b, gzip);
        check(&p, "truncated");
        // header cut short
        let p = dir.path(&format!("short-header{suffix}"));
        write_file(&p, &idx_bytes(&[3, 2, 4], &pixels)[..9], gzip);
        check(&p, "truncated");
        // bad magic
        let mut b = idx_bytes(&[3, 2, 4], &pixels);
        b[0] = 0x42;
        let p = dir.path(&format!("magic{suffix}"));
        write_file(&p, &b, gzip);
        check(&p, "bad magic");
        // unsupported element type (f32)
        let mut b = idx_bytes(&[3, 2, 4], &pixels);
        b[2] = 0x0D;
        let p = dir.path(&format!("type{suffix}"));
        write_file(&p, &b, gzip);
        check(&p, "0x0d");
        // trailing data
        let mut b = idx_bytes(&[3, 2, 4], &pixels);
        b.push(1);
        let p = dir.path(&format!("trailing{suffix}"));
        write_file(&p, &b, gzip);
        check(&p, "trailing");
        // labels file where images are expected
        let p = dir.path(&format!("labels{suffix}"));
        write_file(&p, &idx_bytes(&[3], &[1, 2, 3]), gzip);
        check(&p, "3 dimensions");
    }
    // a damaged gzip stream
    let mut gz = Vec::new();
    {
        let mut enc = flate2::write::GzEncoder::new(&mut gz, flate2::Compression::default());
        enc.write_all(&idx_bytes(&[3, 2, 4], &pixels)).unwrap();
        enc.finish().unwrap();
    }
    gz.truncate(gz.len() / 2);
    let p = dir.path("cut.gz");
    std::fs::write(&p, &gz).unwrap();
    check(&p, "");
    // a missing file is an I/O error naming it
    let missing = dir.path("missing");
    let e = idx::load_images(&missing, None).unwrap_err();
    assert_eq!(e.kind(), bmrm::ErrorKind::Io, "{e}");
    assert!(e.message().contains("cannot open"), "{e}");
    assert!(e.message().contains(&missing.display().to_string()), "{e}");
}

#[test]
fn fashion_mnist_loader_on_small_files() {
    let dir = TempDir::new("fmnist");
    let (pixels, labels) = tiny_images();
    write_file(
        &dir.path("train-images-idx3-ubyte.gz"),
        &idx_bytes(&[3, 2, 4], &pixels),
        true,
    );
    write_file(
        &dir.path("train-labels-idx1-ubyte"),
        &idx_bytes(&[3], &labels),
        false,
    );
    let (x, d, y) = idx::fashion_mnist(&dir.0, true, None).unwrap();
    assert_eq!(d, 8);
    assert_eq!(y, vec![7, 0, 9]);
    let expect: Vec<f32> = pixels.iter().map(|&p| f32::from(p) / 255.0).collect();
    assert_eq!(x, expect);
    let (x, _, y) = idx::fashion_mnist(&dir.0, true, Some(2)).unwrap();
    assert_eq!((x.len(), y.len()), (16, 2));

    // the test set is absent
    let e = idx::fashion_mnist(&dir.0, false, None).unwrap_err();
    assert!(e.to_string().contains("t10k-images-idx3-ubyte"), "{e}");

    // count mismatch: both files named
    write_file(
        &dir.path("train-labels-idx1-ubyte"),
        &idx_bytes(&[2], &labels[..2]),
        false,
    );
    let e = idx::fashion_mnist(&dir.0, true, None).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("count mismatch")
            && msg.contains("train-images-idx3-ubyte.gz")
            && msg.contains("train-labels-idx1-ubyte"),
        "{msg}"
    );
    // label out of range
    write_file(
        &dir.path("train-labels-idx1-ubyte"),
        &idx_bytes(&[3], &[1, 10, 2]),
        false,
    );
    let e = idx::fashion_mnist(&dir.0, true, None).unwrap_err();
    assert!(e.to_string().contains("label 10 of example 1"), "{e}");
}

#[test]
fn real_fashion_mnist_when_installed() {
    let dir = Path::new(idx::FASHION_MNIST_DIR);
    if !dir.join("train-images-idx3-ubyte.gz").exists()
        && !dir.join("train-images-idx3-ubyte").exists()
    {
        println!(
            "skipped: Fashion-MNIST not found under {} (Debian package dataset-fashion-mnist)",
            dir.display()
        );
        return;
    }
    for (train, count) in [(true, 60000), (false, 10000)] {
        let prefix = if train { "train" } else { "t10k" };
        let im =
            idx::load_images(dir.join(format!("{prefix}-images-idx3-ubyte.gz")), None).unwrap();
        assert_eq!((im.count, im.rows, im.cols), (count, 28, 28));
        let (x, d, y) = idx::fashion_mnist(dir, train, None).unwrap();
        assert_eq!(d, 784);
        assert_eq!(y.len(), count);
        assert_eq!(x.len(), count * 784);
        assert!(y.iter().all(|&l| l < 10));
        for c in 0..10 {
            // Fashion-MNIST is balanced: 6000 / 1000 per class.
            assert_eq!(y.iter().filter(|&&l| l == c).count(), count / 10);
        }
        assert!(x.iter().all(|&v| (0.0..=1.0).contains(&v)));
        assert!(x.contains(&1.0));
    }
    // A model over a prefix, and one oracle call.
    let (x, d, y) = idx::fashion_mnist(dir, true, Some(500)).unwrap();
    let model = Multiclass::new(x, d, y, 10, true).unwrap();
    assert_eq!(model.dim(), 10 * 785);
    let w = vec![0.0; model.dim()];
    let c = call(&model, 0, &w);
    assert_eq!(c.hinge(&w), 1.0);
}

// ---------------------------------------------------------------------------
// multiclass over sparse rows

/// Sparse rows holding the values of dense rows give the same corners, entry
/// by entry (integer data, so the scores are exact and ties happen), the
/// same predictions and error rates.
#[test]
fn multiclass_sparse_and_dense_corners_are_identical() {
    use bmrm::models::SparseRows;
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    let mut compared = 0;
    for trial in 0..200 {
        let k = rng.gen_range(2..6);
        let d = rng.gen_range(1..7);
        let bias = trial % 2 == 0;
        let (dense, w) = random_multiclass(&mut rng, 6, d, k, bias, trial % 3 != 0);
        let rows = SparseRows::from_dense(dense.features(), d).unwrap();
        let sparse = Multiclass::new_sparse(rows, dense.labels().to_vec(), k, bias).unwrap();
        assert!(sparse.is_sparse() && !dense.is_sparse());
        assert_eq!(sparse.dim(), dense.dim());
        for i in 0..dense.num_examples() {
            let (a, b) = (call(&dense, i, &w), call(&sparse, i, &w));
            assert_eq!(a.label(), b.label(), "trial {trial} example {i}");
            assert_eq!(a.loss(), b.loss());
            let ea: Vec<(usize, f64)> = a.sparse_entries().collect();
            let eb: Vec<(usize, f64)> = b.sparse_entries().collect();
            assert_eq!(ea, eb, "trial {trial} example {i}");
            assert!(a.dense().is_none() && b.dense().is_none());
            assert_eq!(dense.predict_example(&w, i), sparse.predict_example(&w, i));
            assert_eq!(
                dense.predict_example(&w, i),
                dense.predict(&w, dense.example(i))
            );
            compared += 1;
        }
        assert_eq!(dense.error_rate(&w), sparse.error_rate(&w));
    }
    assert_eq!(compared, 1200);

    // Validation of the sparse constructor.
    let rows = SparseRows::indicators(vec![0, 1, 2], vec![0, 3], 4).unwrap();
    assert!(matches!(
        Multiclass::new_sparse(rows.clone(), vec![0, 1, 1], 2, true),
        Err(Error {
            kind: bmrm::ErrorKind::DimensionMismatch,
            ..
        })
    ));
    assert!(Multiclass::new_sparse(rows.clone(), vec![0, 2], 2, true)
        .unwrap_err()
        .to_string()
        .contains("label 2 of example 1"));
    assert!(Multiclass::new_sparse(rows, vec![0, 1], 1, true).is_err());
}

/// LIBLINEAR's Crammer-Singer dual solver (Keerthi et al. 2008, the
/// `solve_sub_problem` of `-s 4`), written here independently of the crate:
/// exact block minimisation over the dual variables of one example at a
/// time. With `C = 1/(m lambda)`, `w_y = sum_i a_i^y (x_i, 1)` minimises
/// `lambda/2 ||w||^2 + (1/m) sum_i H_i(w)`. Returns `w` and the dual value
/// in our scaling (a lower bound on `min F`).
fn crammer_singer_dual(model: &Multiclass, lambda: f64, passes: usize) -> (Vec<f64>, f64) {
    let (m, k, dp) = (model.num_examples(), model.num_classes(), model.block_dim());
    let c = 1.0 / (m as f64 * lambda);
    let xs: Vec<Vec<f64>> = (0..m)
        .map(|i| {
            let mut x: Vec<f64> = model.example(i).iter().map(|&v| f64::from(v)).collect();
            if model.has_bias() {
                x.push(1.0);
            }
            x
        })
        .collect();
    let mut alpha = vec![0.0; m * k];
    let mut w = vec![0.0; k * dp];
    for _ in 0..passes {
        let mut max_change: f64 = 0.0;
        for (i, x) in xs.iter().enumerate() {
            let yi = model.labels()[i];
            let a = dot(x, x);
            if a == 0.0 {
                continue;
            }
            // B_y = <w_y, x> + e_y - A alpha_y, e_y = [y != y_i].
            let old: Vec<f64> = alpha[i * k..(i + 1) * k].to_vec();
            let b: Vec<f64> = (0..k)
                .map(|y| {
                    dot(&w[y * dp..(y + 1) * dp], x) + f64::from(u8::from(y != yi)) - a * old[y]
                })
                .collect();
            let mut dsort = b.clone();
            dsort[yi] += a * c;
            dsort.sort_by(|p, q| q.partial_cmp(p).unwrap());
            let mut beta = dsort[0] - a * c;
            let mut r = 1;
            while r < k && beta < r as f64 * dsort[r] {
                beta += dsort[r];
                r += 1;
            }
            beta /= r as f64;
            for y in 0..k {
                let cap = if y == yi { c } else { 0.0 };
                let new = cap.min((beta - b[y]) / a);
                let delta = new - old[y];
                if delta != 0.0 {
                    for (wj, xj) in w[y * dp..(y + 1) * dp].iter_mut().zip(x) {
                        *wj += delta * xj;
                    }
                    max_change = max_change.max(delta.abs() / c);
                }
                alpha[i * k + y] = new;
            }
        }
        if max_change < 1e-15 {
            break;
        }
    }
    // Dual in our scaling: -lambda/2 ||w||^2 + lambda sum_i alpha_i^{y_i}.
    let sum_truth: f64 = (0..m).map(|i| alpha[i * k + model.labels()[i]]).sum();
    let dual = -lambda / 2.0 * dot(&w, &w) + lambda * sum_truth;
    (w, dual)
}

/// `F(w) = lambda/2 ||w||^2 + (1/m) sum_i H_i(w)` computed by enumeration.
fn multiclass_primal(model: &Multiclass, w: &[f64], lambda: f64) -> f64 {
    let (k, m) = (model.num_classes(), model.num_examples());
    let bias = model.has_bias();
    let mut risk = 0.0;
    for i in 0..m {
        let x = model.example(i);
        let yi = model.labels()[i];
        let s = |y: usize| dot(w, &phi(x, y, k, bias));
        let best = (0..k)
            .map(|y| f64::from(u8::from(y != yi)) + s(y))
            .fold(f64::NEG_INFINITY, f64::max);
        risk += best - s(yi);
    }
    lambda / 2.0 * dot(w, w) + risk / m as f64
}

/// The optimum of the multiclass model is LIBLINEAR's Crammer-Singer optimum
/// with `C = 1/(m lambda)`: BMRM and Prox-BMRM run to tol_rel 1e-8 agree
/// with an exact dual coordinate solver (its own duality gap below 1e-12),
/// in F and in w.
#[test]
fn multiclass_optimum_equals_crammer_singer_dual() {
    use bmrm::{Algorithm, Problem, Settings, Solver};
    let (x, y) = synthetic::gaussian_multiclass(60, 4, 3, 1.5, 5);
    let model = Multiclass::new(x, 4, y, 3, true).unwrap();
    let lambda = 0.05;
    let (w_cd, dual) = crammer_singer_dual(&model, lambda, 100_000);
    let f_cd = multiclass_primal(&model, &w_cd, lambda);
    assert!(f_cd - dual <= 1e-12, "CS dual solver gap {}", f_cd - dual);
    assert!(dual <= f_cd + 1e-14);
    for alg in [Algorithm::Bmrm, Algorithm::ProxBmrm, Algorithm::PBmrm] {
        let mut s = Settings::new(alg, lambda);
        s.tol_rel = 1e-8;
        s.num_parts = if alg == Algorithm::PBmrm { 6 } else { 1 };
        let mut solver = Solver::new(Problem::from_max_oracle(model.clone()), s).unwrap();
        let mut w = vec![0.0; solver.dim()];
        let info = solver.run(&mut w).unwrap();
        // Both certificates hold against each other.
        assert!(info.lower_bound <= f_cd + 1e-12, "{alg:?}");
        assert!(dual <= info.primal + 1e-12, "{alg:?}");
        assert!(
            (info.primal - f_cd).abs() <= 1e-8 * f_cd + 1e-12,
            "{alg:?}: F = {} vs the CS optimum {f_cd}",
            info.primal
        );
        assert!((multiclass_primal(&model, &w, lambda) - info.primal).abs() < 1e-12);
        // Strong convexity: ||w - w*||^2 <= 2 (F(w) - F*) / lambda.
        let dist = w
            .iter()
            .zip(&w_cd)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f64>()
            .sqrt();
        let bound = (2.0 * (info.gap + 1e-12) / lambda).sqrt() + 1e-6;
        assert!(dist <= bound, "{alg:?}: ||w - w_CS|| = {dist} > {bound}");
        println!(
            "{}: F = {:.12}, CS optimum {f_cd:.12}, ||w - w_CS|| = {dist:.2e}",
            alg.name(),
            info.primal
        );
    }
}

/// The class view of a multiclass model ([`MaxOracle::factoring`]).
fn class_rows(m: &Multiclass) -> std::sync::Arc<dyn bmrm::oracle::ClassRows> {
    match m.factoring() {
        bmrm::oracle::Factoring::Classes(rows) => rows,
        _ => panic!("the multiclass model factors over classes"),
    }
}

/// The pass of all class scores (`ClassRows::scores_pass`, BCFW's exact gap
/// passes over exact steps) gives every example's scores with the bits of
/// `ClassRows::row_dot`, the same on 1 and 3 threads, dense and sparse,
/// more examples than one block; a wrong length is an error naming it.
#[test]
fn multiclass_pass_of_all_class_scores_matches_one_by_one() {
    use bmrm::models::SparseRows;
    let mut rng = ChaCha8Rng::seed_from_u64(29);
    for trial in 0..12 {
        let (k, d) = (rng.gen_range(2..13), rng.gen_range(1..40));
        let bias = trial % 2 == 0;
        let (dense, w) = random_multiclass(&mut rng, 130, d, k, bias, trial % 3 == 0);
        let rows = SparseRows::from_dense(dense.features(), d).unwrap();
        let sparse = Multiclass::new_sparse(rows, dense.labels().to_vec(), k, bias).unwrap();
        for model in [&dense, &sparse] {
            let pool = |t| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(t)
                    .build()
                    .unwrap()
            };
            let cr = class_rows(model);
            let pass = |t| {
                let mut out = vec![f64::NAN; 130 * k];
                pool(t).install(|| cr.scores_pass(&w, &mut out).unwrap().unwrap());
                out
            };
            let (one, three) = (pass(1), pass(3));
            for i in 0..130 {
                for c in 0..k {
                    let want = cr.row_dot(i, c, &w).to_bits();
                    assert_eq!(one[i * k + c].to_bits(), want, "trial {trial} example {i}");
                    assert_eq!(
                        three[i * k + c].to_bits(),
                        want,
                        "trial {trial} example {i}"
                    );
                }
            }
            let mut short = vec![0.0; 130 * k - 1];
            let e = cr.scores_pass(&w, &mut short).unwrap().unwrap_err();
            assert_eq!(e.kind, bmrm::ErrorKind::DimensionMismatch, "{}", e.message);
        }
    }
}

/// `ClassRows::row_dots` scores the classes not left out with the bits of
/// `row_dot` each, and 0 for the others (dense and sparse rows, up to 20
/// classes: past the stack array too).
#[test]
fn multiclass_class_rows_score_at_once_as_one_by_one() {
    use bmrm::models::SparseRows;
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    for trial in 0..40 {
        let (k, d) = (rng.gen_range(1..21), rng.gen_range(1..50));
        let (dense, w) = random_multiclass(&mut rng, 5, d, k.max(2), trial % 2 == 0, false);
        let k = k.max(2);
        let rows = SparseRows::from_dense(dense.features(), d).unwrap();
        let sparse =
            Multiclass::new_sparse(rows, dense.labels().to_vec(), k, trial % 2 == 0).unwrap();
        for model in [&dense, &sparse] {
            let cr = class_rows(model);
            for i in 0..5 {
                let off: Vec<bool> = (0..k).map(|_| rng.gen_bool(0.3)).collect();
                let mut out = vec![f64::NAN; k];
                cr.row_dots(i, &off, &w, &mut out);
                for c in 0..k {
                    let want = if off[c] { 0.0 } else { cr.row_dot(i, c, &w) };
                    assert_eq!(out[c].to_bits(), want.to_bits(), "trial {trial} class {c}");
                }
            }
        }
    }
}

/// `ClassRows::warm` (the rows a second thread reads ahead of BCFW's exact
/// steps) reads one value per 64-byte line of the row: every 16th feature
/// of a dense row; every 16th stored value and column of a sparse one.
#[test]
fn multiclass_class_rows_warm_reads_a_value_per_line() {
    use bmrm::models::SparseRows;
    let mut rng = ChaCha8Rng::seed_from_u64(37);
    for trial in 0..10 {
        let d = rng.gen_range(1..100);
        let (dense, _) = random_multiclass(&mut rng, 6, d, 3, trial % 2 == 0, false);
        let x = dense.features();
        let rows = SparseRows::from_dense(x, d).unwrap();
        let sparse =
            Multiclass::new_sparse(rows.clone(), dense.labels().to_vec(), 3, trial % 2 == 0)
                .unwrap();
        let (dense_rows, sparse_rows) = (class_rows(&dense), class_rows(&sparse));
        for i in 0..6 {
            let row = &x[i * d..(i + 1) * d];
            let want: f64 = row.iter().step_by(16).map(|&v| f64::from(v)).sum();
            assert_eq!(dense_rows.warm(i), Some(want), "trial {trial} row {i}");
            let (idx, val) = rows.row(i);
            let want = val.iter().step_by(16).map(|&v| f64::from(v)).sum::<f64>()
                + idx.iter().step_by(16).map(|&j| f64::from(j)).sum::<f64>();
            assert_eq!(
                sparse_rows.warm(i),
                Some(want),
                "trial {trial} sparse row {i}"
            );
        }
    }
}
