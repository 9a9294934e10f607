% The flandmark/clandmark BMRM toolbox code as it is: risk functions with a
% fourth output, parbmrm's cell-array data, pp_bmrm's K and W, clandmark's
% initW, CleanICP/CleanAfter, and the pp_bmrm/parbmrm/pp_pbmrm wrappers with
% their signatures. Run from run_tests.m. The problem has a known optimum.
c = [0.3; -2.5; 1.7; 0; -0.4; 4; -0.9];
lambda = 0.8;
wopt = max(-1/lambda, min(1/lambda, c));
Fopt = 0.5 * lambda * (wopt' * wopt) + sum(abs(wopt - c));
data = struct('c', c, 'calls', 0);
blocks = cell(1, 7);
for j = 1:7
  blocks{j} = struct('j', j, 'c', c(j), 'dim', 7, 'calls', 0);
end
opts = struct('TolRel', 0, 'TolAbs', 1e-9, 'MaxIter', 500);
[W, stat] = bmrm(data, @risk_timed, lambda, opts);
check(norm(W - wopt) < 1e-6 && stat.Fd <= Fopt + 1e-12, 'bmrm with a 4-output risk: ||W - W*|| = %g', norm(W - wopt));
[W, stat] = pp_bmrm(data, @risk_timed, lambda, setfield(opts, 'W', ones(7, 1)));
check(norm(W - wopt) < 1e-6 && stat.Fd <= Fopt + 1e-12 && stat.Fp >= Fopt - 1e-12, 'pp_bmrm: ||W - W*|| = %g', norm(W - wopt));
[W, stat] = parbmrm(blocks, @block_timed, lambda, opts);
check(norm(W - wopt) < 1e-6 && stat.Fd <= Fopt + 1e-12, 'parbmrm over 7 blocks: ||W - W*|| = %g', norm(W - wopt));
[W, stat] = pp_pbmrm(blocks, @block_timed, lambda, setfield(setfield(opts, 'K', 0.1), 'Tmax', 50));
check(norm(W - wopt) < 1e-6 && stat.Fd <= Fopt + 1e-12, 'pp_pbmrm: ||W - W*|| = %g', norm(W - wopt));
[W, stat] = parbmrm(data, @risk_timed, lambda, opts);
check(norm(W - wopt) < 1e-6, 'parbmrm with one (non-cell) block: ||W - W*|| = %g', norm(W - wopt));
% clandmark's initW (and pp_bmrm's W) is the start: at the optimum, F(W0) = F*.
[W, stat] = bmrm(data, @risk_timed, lambda, setfield(opts, 'initW', wopt));
check(abs(stat.hist.Fp(1) - Fopt) < 1e-12, 'initW: F at the first iterate %.15g = F* %.15g', stat.hist.Fp(1), Fopt);
[~, s2] = pp_bmrm(data, @risk_timed, lambda, setfield(opts, 'W', wopt));
check(abs(s2.hist.Fp(1) - Fopt) < 1e-12, 'pp_bmrm''s W: F at the first iterate %.15g = F* %.15g', s2.hist.Fp(1), Fopt);
% CleanICP: planes inactive for CleanAfter iterations are removed.
[~, s3] = bmrm(data, @risk_timed, lambda, struct('TolRel', 0, 'TolAbs', 1e-9, 'CleanICP', true, 'CleanAfter', 1));
[~, s4] = bmrm(data, @risk_timed, lambda, struct('TolRel', 0, 'TolAbs', 1e-9, 'CleanICP', false));
check(s3.nCP <= s4.nCP && s3.Fd <= Fopt + 1e-12, 'CleanICP: %d planes kept vs %d without', s3.nCP, s4.nCP);
fprintf('toolbox compat: bmrm/pp_bmrm/parbmrm/pp_pbmrm reach W*; CleanICP keeps %d planes (%d without)\n', s3.nCP, s4.nCP);
expect_error(@() bmrm(data, @risk_timed, lambda, struct('initW', wopt, 'W0', wopt)), 'bmrm:badArgument', 'one start point');
expect_error(@() bmrm(data, @risk_timed, lambda, struct('CleanAfter', 3)), 'bmrm:badArgument', 'CleanICP');
expect_error(@() parbmrm(blocks, @block_timed, lambda, struct('MaxMemory', 100)), 'bmrm:unsupported', 'MaxMemory');
expect_error(@() pp_bmrm(data, @risk_timed, lambda, struct('Algorithm', 'bmrm')), 'bmrm:badArgument', 'Algorithm');
