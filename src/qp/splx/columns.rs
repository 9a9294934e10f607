//! Where the pair updates and the Newton steps read the columns of their
//! problem: `H` itself, or the block of a working set (see the parent
//! module).

use super::*;
use crate::error::Result;

/// Where the pair updates read the columns of their problem.
pub(super) trait Columns {
    /// Makes column `j` readable (fetches or checks it on its first use).
    fn prepare(&mut self, j: usize) -> Result<()>;
    /// Column `j`, after `prepare(j)`.
    fn col(&self, j: usize) -> &[f64];
}

/// The columns of `H` itself, each checked on its first use.
pub(super) struct Full<'a, 'b> {
    pub(super) h: &'a dyn Gram,
    pub(super) checked: &'b mut [bool],
}

impl Columns for Full<'_, '_> {
    #[inline]
    fn prepare(&mut self, j: usize) -> Result<()> {
        if !self.checked[j] {
            let c = column_of(self.h, j)?;
            if let Some(i) = first_non_finite(c) {
                return Err(non_finite_h(i, j, c[i]));
            }
            self.checked[j] = true;
        }
        Ok(())
    }
    #[inline]
    fn col(&self, j: usize) -> &[f64] {
        self.h.column(j)
    }
}

/// The block of `H` on the working set, a column copied out (and checked)
/// the first time a pair update uses it.
pub(super) struct Block<'a, 'b> {
    pub(super) h: &'a dyn Gram,
    pub(super) planes: &'b [usize],
    /// `slot[a]`: where local column `a` is in `pool` (`NONE`: not yet).
    pub(super) slot: &'b mut [usize],
    /// Copied columns, each of `planes.len()` entries; its capacity is
    /// reserved for all of them, so it never reallocates.
    pub(super) pool: &'b mut Vec<f64>,
}

impl Columns for Block<'_, '_> {
    #[inline]
    fn prepare(&mut self, a: usize) -> Result<()> {
        if self.slot[a] == NONE {
            let m = self.planes.len();
            let j = self.planes[a];
            let c = column_of(self.h, j)?;
            let from = self.pool.len();
            self.pool.extend(self.planes.iter().map(|&i| c[i]));
            if let Some(b) = first_non_finite(&self.pool[from..]) {
                return Err(non_finite_h(self.planes[b], j, self.pool[from + b]));
            }
            self.slot[a] = from / m;
        }
        Ok(())
    }
    #[inline]
    fn col(&self, a: usize) -> &[f64] {
        let m = self.planes.len();
        let s = self.slot[a] * m;
        &self.pool[s..s + m]
    }
}
