//! Constructors of problems whose max-oracle is a built-in model (the
//! multiclass SVM over dense or CSR rows, the chain model over dense or CSR
//! token features), and their prediction helpers. The data are copied: the
//! caller's arrays may be freed as soon as the constructor returns.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::models::{Chain, Multiclass, SparseRows};

use super::boundary::{non_null, slice, status};
use super::problem::{bmrm_problem, Builtin};
use super::types::bmrm_status;

/// `a * b`, or an error naming `what` when it overflows.
fn mul(a: usize, b: usize, what: &str) -> Result<usize> {
    a.checked_mul(b)
        .ok_or_else(|| Error::invalid_argument(format!("{what}: {a} x {b} overflows")))
}

/// Writes the problem to `*out`.
///
/// # Safety
/// `out` is not NULL and valid for writing one pointer.
unsafe fn emit(out: *mut *mut bmrm_problem, builtin: Builtin) {
    let p = bmrm_problem::with_builtin(builtin);
    // SAFETY: `out` is valid for writing by the caller's contract.
    unsafe { out.write(Box::into_raw(p)) };
}

/// The per-token sequence lengths as a slice, and their sum.
///
/// # Safety
/// As [`slice`].
unsafe fn lengths<'a>(lengths: *const usize, m: usize) -> Result<(&'a [usize], usize)> {
    if m == 0 {
        return Err(Error::invalid_argument(
            "m (the number of sequences) must be positive, got 0",
        ));
    }
    // SAFETY: forwarded from the caller's contract.
    let l = unsafe { slice(lengths, m, "lengths") }?;
    let total = l
        .iter()
        .try_fold(0usize, |a, &b| a.checked_add(b))
        .ok_or_else(|| Error::invalid_argument("the sequence lengths overflow"))?;
    Ok((l, total))
}

/// CSR rows from C arrays: `indptr` has `rows + 1` entries, `indices` and
/// `values` (NULL = all 1) have `indptr[rows]`.
///
/// # Safety
/// As [`slice`] for each array.
unsafe fn csr(
    indptr: *const usize,
    indices: *const u32,
    values: *const f32,
    rows: usize,
    cols: usize,
) -> Result<SparseRows> {
    let n = rows
        .checked_add(1)
        .ok_or_else(|| Error::invalid_argument(format!("{rows} rows overflow")))?;
    // SAFETY: forwarded from the caller's contract (rows + 1 entries).
    let indptr = unsafe { slice(indptr, n, "indptr") }?.to_vec();
    let nnz = *indptr.last().unwrap_or(&0);
    // SAFETY: forwarded from the caller's contract (indptr[rows] entries).
    let indices = unsafe { slice(indices, nnz, "indices") }?.to_vec();
    if values.is_null() {
        SparseRows::indicators(indptr, indices, cols)
    } else {
        // SAFETY: forwarded from the caller's contract (indptr[rows] entries).
        let values = unsafe { slice(values, nnz, "values") }?.to_vec();
        SparseRows::new(indptr, indices, values, cols)
    }
}

/// The multiclass constructors' size check.
fn positive_sizes(m: usize, d: usize) -> Result<()> {
    if m == 0 || d == 0 {
        return Err(Error::invalid_argument(format!(
            "m and d must be positive (got m = {m}, d = {d})"
        )));
    }
    Ok(())
}

/// Makes a problem whose max-oracle is the linear multiclass SVM with 0/1
/// loss (Crammer-Singer) over `m` examples of `d` features, `x` row-major
/// (`m * d` floats), labels `y` (`m` values in `0..k`), `k >= 2` classes, with
/// a constant 1 feature appended to every example when `bias`. Its
/// dimension is `k * (d + bias)`, class `c` owning `w[c (d + bias) ..]`. With
/// lambda as in bmrm_settings, the optimum is LIBLINEAR's `-s 4` one with
/// `C = 1/(m lambda)`. The data are copied. Writes the problem to `*out`
/// (only on success); free it with bmrm_problem_free.
///
/// Errors: NULL pointer; m, d or k too small, a label out of range or a
/// non-finite feature (BMRM_ERROR_INVALID_ARGUMENT).
///
/// # Safety
/// Each pointer is NULL or valid for reading the number of items stated,
/// `out` for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn bmrm_problem_new_multiclass(
    x: *const f32,
    m: usize,
    d: usize,
    y: *const u32,
    k: usize,
    bias: bool,
    out: *mut *mut bmrm_problem,
) -> bmrm_status {
    status("bmrm_problem_new_multiclass", || {
        non_null(out, "out")?;
        non_null(x, "x")?;
        non_null(y, "y")?;
        positive_sizes(m, d)?;
        // SAFETY: forwarded from this function's contract.
        let xs = unsafe { slice(x, mul(m, d, "m x d")?, "x") }?.to_vec();
        // SAFETY: forwarded from this function's contract.
        let ys = unsafe { slice(y, m, "y") }?;
        let model = Multiclass::new(xs, d, ys.iter().map(|&v| v as usize).collect(), k, bias)?;
        // SAFETY: `out` is not NULL and writable by the contract.
        unsafe { emit(out, Builtin::Multiclass(Arc::new(model))) };
        Ok(())
    })
}

/// As bmrm_problem_new_multiclass over sparse rows in CSR form: row `i` has
/// the features `indices[indptr[i] .. indptr[i + 1]]` (each `< d`) with the
/// `values` at the same positions; `indptr` has `m + 1` entries starting at 0
/// and never decreasing; `values` NULL means every listed feature is 1. The
/// problem is the one the dense constructor makes from the same values.
///
/// # Safety
/// `indptr` is NULL or valid for `m + 1` items; `indices` and `values` NULL
/// or valid for `indptr[m]` items; `y` for `m`; `out` for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn bmrm_problem_new_multiclass_csr(
    indptr: *const usize,
    indices: *const u32,
    values: *const f32,
    m: usize,
    d: usize,
    y: *const u32,
    k: usize,
    bias: bool,
    out: *mut *mut bmrm_problem,
) -> bmrm_status {
    status("bmrm_problem_new_multiclass_csr", || {
        non_null(out, "out")?;
        non_null(indptr, "indptr")?;
        non_null(y, "y")?;
        positive_sizes(m, d)?;
        // SAFETY: forwarded from this function's contract.
        let rows = unsafe { csr(indptr, indices, values, m, d) }?;
        // SAFETY: forwarded from this function's contract.
        let ys = unsafe { slice(y, m, "y") }?;
        let model =
            Multiclass::new_sparse(rows, ys.iter().map(|&v| v as usize).collect(), k, bias)?;
        // SAFETY: `out` is not NULL and writable by the contract.
        unsafe { emit(out, Builtin::Multiclass(Arc::new(model))) };
        Ok(())
    })
}

/// Makes a problem whose max-oracle is the chain model for sequence
/// labelling (Viterbi, normalised Hamming loss) over `m` sequences of
/// `lengths[i] >= 1` tokens; the tokens of all sequences, in order, have `d`
/// dense features each (`x`: `T * d` floats row-major, `T` the sum of the
/// lengths) and labels in `0..k` (`labels`: `T` values), `k >= 2`. With
/// `bias` a constant 1 is appended to every token's features. The dimension
/// is `k (d + bias) + k k + 2 k`: emission weights (label `c` owns
/// `w[c (d + bias) ..]`), then transitions (`a -> b` at
/// `k (d + bias) + a k + b`), start biases and end biases. The data are
/// copied. Writes the problem to `*out` (only on success).
///
/// Errors: NULL pointer; m, d or k too small, an empty sequence, a label out
/// of range or a non-finite feature (BMRM_ERROR_INVALID_ARGUMENT).
///
/// # Safety
/// `lengths` is NULL or valid for `m` items, `x` for `T * d`, `labels` for
/// `T`; `out` for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn bmrm_problem_new_chain_dense(
    x: *const f32,
    d: usize,
    lengths: *const usize,
    m: usize,
    labels: *const u32,
    k: usize,
    bias: bool,
    out: *mut *mut bmrm_problem,
) -> bmrm_status {
    status("bmrm_problem_new_chain_dense", || {
        non_null(out, "out")?;
        non_null(x, "x")?;
        non_null(lengths, "lengths")?;
        non_null(labels, "labels")?;
        if d == 0 {
            return Err(Error::invalid_argument("d must be positive, got 0"));
        }
        // SAFETY: forwarded from this function's contract.
        let (lens, tokens) = unsafe { self::lengths(lengths, m) }?;
        // SAFETY: forwarded from this function's contract.
        let xs = unsafe { slice(x, mul(tokens, d, "tokens x d")?, "x") }?.to_vec();
        // SAFETY: forwarded from this function's contract.
        let ys = unsafe { slice(labels, tokens, "labels") }?.to_vec();
        let model = Chain::dense(xs, d, lens, ys, k, bias)?;
        // SAFETY: `out` is not NULL and writable by the contract.
        unsafe { emit(out, Builtin::Chain(Arc::new(model))) };
        Ok(())
    })
}

/// As bmrm_problem_new_chain_dense with sparse token features in CSR form
/// over `num_features` features: token `t` has the features
/// `indices[indptr[t] .. indptr[t + 1]]` with the `values` at the same
/// positions (`values` NULL: indicator features, all 1); `indptr` has
/// `T + 1` entries. The emission weights are feature-major here: feature `j`
/// (`num_features` for the bias) of label `c` is `w[j k + c]`; transitions,
/// start and end biases follow as in the dense model.
///
/// # Safety
/// `lengths` is NULL or valid for `m` items, `indptr` for `T + 1`,
/// `indices` and `values` for `indptr[T]`, `labels` for `T`; `out` for
/// writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn bmrm_problem_new_chain_sparse(
    indptr: *const usize,
    indices: *const u32,
    values: *const f32,
    num_features: usize,
    lengths: *const usize,
    m: usize,
    labels: *const u32,
    k: usize,
    bias: bool,
    out: *mut *mut bmrm_problem,
) -> bmrm_status {
    status("bmrm_problem_new_chain_sparse", || {
        non_null(out, "out")?;
        non_null(indptr, "indptr")?;
        non_null(lengths, "lengths")?;
        non_null(labels, "labels")?;
        // SAFETY: forwarded from this function's contract.
        let (lens, tokens) = unsafe { self::lengths(lengths, m) }?;
        // SAFETY: forwarded from this function's contract.
        let rows = unsafe { csr(indptr, indices, values, tokens, num_features) }?;
        // SAFETY: forwarded from this function's contract.
        let ys = unsafe { slice(labels, tokens, "labels") }?.to_vec();
        let model = Chain::sparse(rows, lens, ys, k, bias)?;
        // SAFETY: `out` is not NULL and writable by the contract.
        unsafe { emit(out, Builtin::Chain(Arc::new(model))) };
        Ok(())
    })
}

/// `w` of the problem's dimension as a slice.
///
/// # Safety
/// `w` is NULL or valid for reading `dim` doubles.
unsafe fn weights<'a>(p: &bmrm_problem, w: *const f64, dim: usize) -> Result<&'a [f64]> {
    non_null(w, "w")?;
    if dim != p.dim() {
        return Err(Error::dimension_mismatch(format!(
            "dim = {dim} but the problem's dimension is {}",
            p.dim()
        )));
    }
    // SAFETY: forwarded from the caller's contract; `dim` is the problem's
    // dimension, which fits in memory.
    let w = unsafe { slice(w, dim, "w") }?;
    // A NaN weight makes every score NaN and every argmax "label 0".
    if let Some((j, v)) = crate::linalg::first_non_finite(w) {
        return Err(Error::non_finite(format!("w[{j}] is {v}")));
    }
    Ok(w)
}

/// Writes `labels` to `out` (`len` items) after checking the length.
///
/// # Safety
/// `out` is not NULL and valid for writing `len` items.
unsafe fn write_labels(out: *mut u32, len: usize, labels: &[u32], what: &str) -> Result<()> {
    if len != labels.len() {
        return Err(Error::dimension_mismatch(format!(
            "{what} = {len} but the problem has {}",
            labels.len()
        )));
    }
    // SAFETY: `out` is valid for `len` = `labels.len()` items by the
    // caller's contract, and cannot overlap `labels` (ours).
    unsafe { std::ptr::copy_nonoverlapping(labels.as_ptr(), out, len) };
    Ok(())
}

/// The checks both predict functions make, in their order: the problem,
/// `labels` not NULL, the built-in model that `pick` takes (else an error
/// naming `kind`), and `w`. One place, so the two report alike.
///
/// # Safety
/// `p` is NULL or a live problem; `w` NULL or valid for reading `dim` doubles.
unsafe fn model_and_weights<'a, M>(
    p: *const bmrm_problem,
    w: *const f64,
    dim: usize,
    labels: *mut u32,
    kind: &str,
    pick: fn(Builtin) -> Option<M>,
) -> Result<(M, &'a [f64])> {
    // SAFETY: forwarded from the caller's contract.
    let p = unsafe { bmrm_problem::from_ptr(p, "the problem p") }?;
    non_null(labels, "labels")?;
    let model = p
        .builtin()
        .and_then(pick)
        .ok_or_else(|| Error::invalid_argument(format!("the problem is not a built-in {kind}")))?;
    // SAFETY: forwarded from the caller's contract.
    let w = unsafe { weights(p, w, dim) }?;
    Ok((model, w))
}

/// Predicts the class `argmax_c <w_c, (x_i, 1)>` (ties: the lowest class) of
/// every example of a problem made by bmrm_problem_new_multiclass or
/// bmrm_problem_new_multiclass_csr, into `labels` (`m` values, written only
/// on success). For a test set, make a second problem over it.
///
/// Errors: NULL pointer; a problem that is not a built-in multiclass model
/// (BMRM_ERROR_INVALID_ARGUMENT); `dim` or `m` not the problem's
/// (BMRM_ERROR_DIMENSION_MISMATCH); a NaN or infinite weight
/// (BMRM_ERROR_NON_FINITE).
///
/// # Safety
/// `p` is NULL or a live problem; `w` NULL or valid for `dim` doubles;
/// `labels` NULL or valid for writing `m` values.
#[no_mangle]
pub unsafe extern "C" fn bmrm_multiclass_predict(
    p: *const bmrm_problem,
    w: *const f64,
    dim: usize,
    labels: *mut u32,
    m: usize,
) -> bmrm_status {
    status("bmrm_multiclass_predict", || {
        // SAFETY: forwarded from this function's contract.
        let (model, w) = unsafe {
            model_and_weights(
                p,
                w,
                dim,
                labels,
                "multiclass model (bmrm_problem_new_multiclass or _csr)",
                |b| match b {
                    Builtin::Multiclass(model) => Some(model),
                    _ => None,
                },
            )
        }?;
        let pred: Vec<u32> = (0..model.labels().len())
            .map(|i| model.predict_example(w, i) as u32)
            .collect();
        // SAFETY: `labels` is not NULL and writable for `m` values.
        unsafe { write_labels(labels, m, &pred, "m") }
    })
}

/// Predicts the labels of every token of a problem made by
/// bmrm_problem_new_chain_dense or bmrm_problem_new_chain_sparse by plain
/// Viterbi (no loss; ties: the lowest labels), into `labels` (`num_tokens`
/// values, sequence after sequence, written only on success). For a test set,
/// make a second problem over it.
///
/// Errors: NULL pointer; a problem that is not a built-in chain model
/// (BMRM_ERROR_INVALID_ARGUMENT); `dim` or `num_tokens` not the problem's
/// (BMRM_ERROR_DIMENSION_MISMATCH); a NaN or infinite weight
/// (BMRM_ERROR_NON_FINITE).
///
/// # Safety
/// `p` is NULL or a live problem; `w` NULL or valid for `dim` doubles;
/// `labels` NULL or valid for writing `num_tokens` values.
#[no_mangle]
pub unsafe extern "C" fn bmrm_chain_predict(
    p: *const bmrm_problem,
    w: *const f64,
    dim: usize,
    labels: *mut u32,
    num_tokens: usize,
) -> bmrm_status {
    status("bmrm_chain_predict", || {
        // SAFETY: forwarded from this function's contract.
        let (model, w) = unsafe {
            model_and_weights(
                p,
                w,
                dim,
                labels,
                "chain model (bmrm_problem_new_chain_dense or _sparse)",
                |b| match b {
                    Builtin::Chain(model) => Some(model),
                    _ => None,
                },
            )
        }?;
        let pred = model.predict_all(w);
        // SAFETY: `labels` is not NULL and writable for `num_tokens` values.
        unsafe { write_labels(labels, num_tokens, &pred, "num_tokens") }
    })
}

/// The dimension of w for the problem `p`, written to `*out` (only on
/// success): what the built-in constructors computed, or the `dim` given to
/// bmrm_problem_new.
///
/// # Safety
/// `p` is NULL or a live problem; `out` NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn bmrm_problem_dim(p: *const bmrm_problem, out: *mut usize) -> bmrm_status {
    status("bmrm_problem_dim", || {
        // SAFETY: forwarded from this function's contract.
        let p = unsafe { bmrm_problem::from_ptr(p, "the problem p") }?;
        non_null(out, "out")?;
        // SAFETY: `out` is not NULL and writable by the contract.
        unsafe { out.write(p.dim()) };
        Ok(())
    })
}
