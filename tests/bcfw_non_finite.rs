//! BCFW lets no non-finite value through. A max-oracle whose psi
//! overflows (1e308) or whose squared norm overflows (1e160) ends the run
//! with `Error::non_finite` naming where; a lambda whose inverse overflows
//! is refused by `Settings::validate` for every algorithm.

use bmrm::oracle::{Corner, MaxOracle};
use bmrm::{Algorithm, ErrorKind, Problem, Settings, Solver};

/// Two labels per example; label 1 has loss 1 and psi = `big` e_0.
struct Big {
    big: f64,
}

impl MaxOracle for Big {
    fn dim(&self) -> usize {
        2
    }
    fn num_examples(&self) -> usize {
        4
    }
    fn max_oracle(&self, _i: usize, w: &[f64], out: &mut Corner) -> bmrm::Result<()> {
        // H(1) = 1 - big w_0 against H(truth) = 0.
        if 1.0 - self.big * w[0] > 0.0 {
            out.set_loss(1.0);
            out.set_label(1);
            out.add(0, self.big)?;
            out.add(1, 1.0)?;
        }
        Ok(())
    }
}

#[test]
fn bcfw_reports_an_overflowing_oracle_as_non_finite() {
    for big in [1e308, 1e160] {
        let mut s = Settings::new(Algorithm::Bcfw, 0.1);
        s.num_threads = 1;
        // Before the fix, 1e160 made no progress and never stopped: the
        // limit turns a regression into a failure, not a hang.
        s.time_limit_seconds = 20.0;
        let mut solver = Solver::new(Problem::from_max_oracle(Big { big }), s).unwrap();
        let mut w = vec![0.0; 2];
        let err = solver
            .run(&mut w)
            .map(|info| format!("{info:?}"))
            .expect_err("an overflowing oracle must fail");
        assert_eq!(err.kind, ErrorKind::NonFinite, "psi {big:e}: {err}");
        assert!(err.to_string().contains("example"), "psi {big:e}: {err}");
    }
}

#[test]
fn lambdas_whose_inverse_overflows_are_refused() {
    for lambda in [5e-324, 1e-310, f64::MIN_POSITIVE / 2.0] {
        for algorithm in [
            Algorithm::Bmrm,
            Algorithm::ProxBmrm,
            Algorithm::PBmrm,
            Algorithm::ProxPBmrm,
            Algorithm::Bcfw,
            Algorithm::Sgd,
            Algorithm::CuttingPlane,
        ] {
            let err = Settings::new(algorithm, lambda).validate().unwrap_err();
            assert_eq!(err.kind, ErrorKind::InvalidArgument, "{lambda:e}");
            assert!(err.to_string().contains("lambda"), "{err}");
        }
    }
    // The smallest normal number is accepted: 1/lambda is finite.
    Settings::new(Algorithm::Bcfw, f64::MIN_POSITIVE)
        .validate()
        .unwrap();
}
