% The MATLAB/Octave front ends (bindings/matlab): run by tests/octave.rs as
%   octave-cli --eval "cd tests/octave; run_tests"
% with the MEX gateway on the path (BMRM_MEX_DIR). Prints "N passed, M failed"
% last and exits with status 1 when a check failed.
global checks_passed checks_failed l1_probes
checks_passed = 0;
checks_failed = 0;
here = fileparts(mfilename('fullpath'));
root = fileparts(fileparts(here));
addpath(fullfile(root, 'bindings', 'matlab'));
if ~isempty(getenv('BMRM_MEX_DIR'))
  addpath(getenv('BMRM_MEX_DIR'));
end
check(exist('bmrm_mex') == 3, 'bmrm_mex is not built (run build_mex)');
fprintf('bmrm %s\n', bmrm_mex('version'));

%% The toolbox convention on a problem with a known optimum.
c = [0.3; -2.5; 1.7; 0; -0.4; 4; -0.9];
lambda = 0.8;
wopt = max(-1/lambda, min(1/lambda, c));
Fopt = 0.5 * lambda * (wopt' * wopt) + sum(abs(wopt - c));
data = struct('c', c, 'calls', 0);
l1_probes = 0;
[W, stat] = bmrm(data, @l1risk, lambda, struct('TolRel', 0, 'TolAbs', 1e-9));
check(l1_probes == 1, 'risk(data) called %d times (once expected)', l1_probes);
check(size(W, 1) == 7 && size(W, 2) == 1, 'W is %dx%d', size(W, 1), size(W, 2));
check(norm(W - wopt) < 1e-6, '||W - W*|| = %g', norm(W - wopt));
check(stat.Fd <= Fopt + 1e-12 && Fopt <= stat.Fp + 1e-12, 'Fd %g <= F* %g <= Fp %g', stat.Fd, Fopt, stat.Fp);
check(stat.exitflag == 2, 'exitflag %d (2: TolAbs)', stat.exitflag);
check(abs(stat.Fp - (0.5 * lambda * (W' * W) + sum(abs(W - c)))) < 1e-12, 'Fp is F(W)');
check(numel(stat.hist.Fp) == stat.nIter && numel(stat.hist.Fd) == stat.nIter && ...
      numel(stat.hist.R) == stat.nIter && numel(stat.hist.runtime) == stat.nIter, 'hist lengths');
check(all(diff(stat.hist.Fp) <= 0) && all(diff(stat.hist.Fd) >= 0), 'hist monotone');
check(all(diff(stat.hist.runtime) >= 0), 'runtime increasing');
fprintf('toolbox L1: %d iterations, Fp %.12g, Fd %.12g, F* %.12g\n', stat.nIter, stat.Fp, stat.Fd, Fopt);

% The data the risk returns is threaded through its calls.
global data_seen
data_seen = 0;
[~, s2] = bmrm(data, @counting_risk, lambda, struct('MaxIter', 4));
check(data_seen == 1 + s2.oracle_calls, 'data.calls reached %d after the probe and %d risk calls', ...
      data_seen, s2.oracle_calls);
check(islogical(s2.certified) && s2.certified, 'a risk certifies its gap (stat.certified)');

% A risk with two outputs, W0, MaxIter (exitflag 0), TimeLimit, TolRel default.
[W, s] = bmrm(data, @two_outputs, lambda, struct('MaxIter', 3, 'W0', ones(7, 1)));
check(s.exitflag == 0 && s.nIter == 3, 'MaxIter: exitflag %d after %d', s.exitflag, s.nIter);
[W, s] = bmrm(data, @l1risk, lambda);
check(s.exitflag == 1 && (s.Fp - s.Fd) <= 1e-3 * abs(s.Fp), 'TolRel default: exitflag %d', s.exitflag);
[W, s] = bmrm(data, @l1risk, lambda, struct('W0', wopt, 'TolAbs', 1e-9, 'TolRel', 0));
check(abs(s.hist.Fp(1) - Fopt) < 1e-12 && norm(W - wopt) < 1e-12, ...
      'W0 at the optimum: F(W0) = %.15g, ||W - W*|| = %g', s.hist.Fp(1), norm(W - wopt));
out = evalc('bmrm(data, @l1risk, lambda, struct(''verb'', 1, ''MaxIter'', 3));');
check(numel(strfind(out, 'Fp=')) >= 2, 'verb prints the iterations:\n%s', out);
[~, s] = bmrm(data, @l1risk, lambda, struct('BufSize', 0.0001, 'CleanBuffer', inf));
check(s.exitflag == 1, 'tiny BufSize: exitflag %d', s.exitflag);

%% Every Algorithm, with cell-array partitions for the P variants.
blocks = cell(1, 7);
for j = 1:7
  blocks{j} = struct('j', j, 'c', c(j), 'dim', 7, 'calls', 0);
end
algorithms = {'bmrm', 'proxbmrm', 'pbmrm', 'proxpbmrm', 'cp'};
for k = 1:numel(algorithms)
  a = algorithms{k};
  opts = struct('Algorithm', a, 'TolRel', 1e-9, 'MaxIter', 500);
  if strcmp(a, 'cp')
    opts.MaxIter = 3;   % the engine's cutting-plane method is slow per iteration
  end
  if any(strcmp(a, {'pbmrm', 'proxpbmrm'}))
    [W, s] = bmrm(blocks, @l1block, lambda, opts);
  else
    [W, s] = bmrm(data, @l1risk, lambda, opts);
  end
  check(s.Fd <= Fopt + 1e-9 && Fopt <= s.Fp + 1e-9, '%s: Fd %g <= F* %g <= Fp %g', a, s.Fd, Fopt, s.Fp);
  if ~strcmp(a, 'cp')
    check(norm(W - wopt) < 1e-3, '%s: ||W - W*|| = %g', a, norm(W - wopt));
  end
  fprintf('Algorithm %-9s: %3d iterations, ||W - W*|| = %.2e, exit: %s\n', a, s.nIter, norm(W - wopt), s.exit);
end
% The sum of the blocks with plain BMRM equals the full risk.
[Wb, sb] = bmrm(blocks, @l1block, lambda, struct('TolRel', 0, 'TolAbs', 1e-9));
check(norm(Wb - wopt) < 1e-6, 'blocks summed: ||W - W*|| = %g', norm(Wb - wopt));

%% Errors: the user's message, NaN, bad arguments; the session goes on.
e = expect_error(@() bmrm(setfield(data, 'fail_at', 4), @l1risk, lambda), ...
                 'bmrm:callbackError', 'the user''s own failure at call 4');
check(~isempty(e) && ~isempty(strfind(e.message, 'risk(data, W) failed at iteration')), 'where: %s', e.message);
check(~isempty(e) && ~isempty(strfind(e.message, 'test:userError')), 'the user''s identifier: %s', e.message);
b2 = blocks;
b2{3} = 'not a struct';
expect_error(@() bmrm(b2, @l1block, lambda, struct('Algorithm', 'pbmrm')), ...
             'bmrm:callbackError', 'risk(data{3}, W) failed');
expect_error(@() bmrm(setfield(data, 'nan_at', 3), @l1risk, lambda), 'bmrm:nonFinite', 'subgrad(2) is NaN');
expect_error(@() bmrm(data, @(d, w) deal(NaN, zeros(7, 1), d), lambda), 'bmrm:nonFinite', 'is NaN');
expect_error(@() bmrm(data, @(d, varargin) first_then(d, @() deal(1, zeros(3, 1), d), varargin{:}), lambda), ...
             'bmrm:badOutput', 'vector of 7 elements');
expect_error(@() bmrm(data, @(d, varargin) first_then(d, @() deal('x', zeros(7, 1), d), varargin{:}), lambda), ...
             'bmrm:badOutput', 'real scalar');
expect_error(@() bmrm(data, @l1risk, -1), 'bmrm:badArgument', 'lambda');
expect_error(@() bmrm(data, @l1risk, 'abc'), 'bmrm:badArgument', 'lambda');
expect_error(@() bmrm(data, 'l1risk', 1), 'bmrm:badArgument', 'function handle');
expect_error(@() bmrm(data, @l1risk, 1, struct('Algorithm', 'foo')), 'bmrm:badArgument', 'Algorithm');
expect_error(@() bmrm(data, @l1risk, 1, struct('Algorithm', 'pbmrm')), 'bmrm:badArgument', 'cell array');
expect_error(@() bmrm(data, @l1risk, 1, struct('TolRell', 1)), 'bmrm:badArgument', 'unknown option ''TolRell''');
expect_error(@() bmrm(data, @l1risk, 1, struct('MaxIter', 'many')), 'bmrm:badArgument', 'max_iterations');
expect_error(@() bmrm(data, @l1risk, 1, struct('W0', [1 2])), 'bmrm:badArgument', 'W0');
expect_error(@() bmrm_mex('bmrm', data, @l1risk, 1, struct('dim', 7, 'algorithm', 'nope')), ...
             'bmrm:badArgument', 'unknown Algorithm');
expect_error(@() bmrm_mex('nope'), 'bmrm:badArgument', 'unknown command');
% Ctrl-C (SIGINT to this process, as the terminal sends it) inside the risk.
e = expect_error(@() bmrm(setfield(data, 'interrupt_at', 4), @l1risk, 0.01), 'bmrm:interrupted', 'stopped cleanly');
[W, s] = bmrm(data, @l1risk, lambda, struct('TolRel', 0, 'TolAbs', 1e-9));
check(norm(W - wopt) < 1e-6, 'a solve after the errors: ||W - W*|| = %g', norm(W - wopt));

%% A multiclass SVM: bmrm (toolbox convention, summed risk) and bcfw's
% calling convention (mean risk: lambda_bcfw = lambda_sum / m) agree.
K = 3; d = 6; m = 120;
[X, y] = mc_data(m, d, K, 7);
lambda_sum = 1.2;
mc = struct('X', X, 'y', y, 'K', K);
[Wm, sm] = bmrm(mc, @mc_risk, lambda_sum, struct('TolRel', 1e-8));
param = mc_param(X, y, K);
% The BCFW convention's oracles driving a bundle method (options.algorithm).
[model, prog] = bcfw(param, struct('lambda', lambda_sum / m, 'algorithm', 'bmrm', 'TolRel', 1e-8));
gap_b = (sm.Fp - sm.Fd) / m;
gap_o = prog.primal(end) - prog.dual(end);
check(abs(sm.Fp / m - prog.primal(end)) <= max(gap_b, gap_o) + 1e-12, ...
      'bmrm F/m %.12g vs bcfw(algorithm bmrm) F %.12g', sm.Fp / m, prog.primal(end));
tol_w = sqrt(2 * gap_b / (lambda_sum / m)) + sqrt(2 * gap_o / (lambda_sum / m)) + 1e-9;
check(norm(model.w - Wm) <= tol_w, '||w_bcfw - W_bmrm|| = %g > %g', norm(model.w - Wm), tol_w);
fprintf('multiclass: bmrm %d iterations, Fp/m = %.10g; bcfw param through BMRM: F = %.10g\n', ...
        sm.nIter, sm.Fp / m, prog.primal(end));
% BCFW itself, with the BCFW code's defaults (gap sampling, pairwise steps,
% cache) and every other step type, sampling, cache and averaging choice.
lam = lambda_sum / m;
variants = {struct(), ...
            struct('stepType', 1, 'sample', 'uniform', 'useCache', 0), ...
            struct('stepType', 3, 'sample', 'perm'), ...
            struct('stepType', 1, 'do_line_search', 0, 'do_weighted_averaging', 1, 'useCache', 0, 'sample', 'uniform'), ...
            struct('stepType', 2, 'sample', 'gap', 'useCache', 1, 'maxCacheSize', 5, 'cacheNu', 0.1, 'cacheFactor', 0.5)};
names = {'defaults', 'FW uniform', 'away perm', 'FW no line search, averaging', 'pairwise small cache'};
for k = 1:numel(variants)
  o = variants{k};
  o.lambda = lam;
  o.gap_threshold = 1e-4;
  o.num_passes = 2000;
  [model, prog] = bcfw(param, o);
  gap = prog.gap(end);
  converged = prog.exitflag == 2;
  if isfield(o, 'do_line_search')
    converged = true;   % the fixed step is slow: checked by the bounds only
  end
  check(converged && gap <= 1e-4 + 1e-12, 'bcfw %s: exit %s, gap %g', names{k}, prog.exit, gap);
  check(prog.dual(end) <= sm.Fp / m + 1e-12 && sm.Fd / m <= prog.primal(end) + 1e-12, ...
        'bcfw %s bounds vs bmrm: dual %.12g <= %.12g, %.12g <= primal %.12g', names{k}, ...
        prog.dual(end), sm.Fp / m, sm.Fd / m, prog.primal(end));
  fp = prog.primal(isfinite(prog.primal));   % Inf until the first exact gap pass
  check(all(diff(prog.dual) >= -1e-12) && all(diff(fp) <= 1e-12) && ~isempty(fp), ...
        'bcfw %s: monotone bounds', names{k});
  exact = prog.exact_gap(isfinite(prog.exact_gap));
  check(~isempty(exact) && exact(end) >= gap - 1e-12, ...
        'bcfw %s: the last exact gap %g vs the certified %g', names{k}, exact(end), gap);
  % The dual at the returned w: ell - lambda/2 ||w||^2, a valid lower bound.
  dual_w = model.ell - 0.5 * lam * (model.w' * model.w);
  check(dual_w <= sm.Fp / m + 1e-12 && dual_w >= prog.dual(end) - gap - 1e-12, ...
        'bcfw %s: ell gives the dual %.12g (best %.12g)', names{k}, dual_w, prog.dual(end));
  if converged && ~isfield(o, 'do_line_search')
    check(abs(prog.primal(end) - sm.Fp / m) <= gap + gap_b + 1e-12, 'bcfw %s: primal %.12g vs bmrm %.12g', ...
          names{k}, prog.primal(end), sm.Fp / m);
    check(norm(model.w - Wm) <= sqrt(2 * gap / lam) + sqrt(2 * gap_b / lam) + 1e-9, ...
          'bcfw %s: ||w - W_bmrm|| = %g', names{k}, norm(model.w - Wm));
  end
  if k == 1
    % This problem (120 examples, 3 classes, lambda 0.01) reaches
    % gap 1e-4 within 100 passes with bcfw.m's defaults (it took 530).
    check(numel(prog.gap) <= 100 && prog.eff_pass(end) <= 100, ...
          'bcfw defaults: %d passes, %g effective, to gap 1e-4', numel(prog.gap), prog.eff_pass(end));
  end
  fprintf('bcfw %-29s: %4d passes, %6.1f effective, primal %.10g, gap %.2e, ell %.6f\n', names{k}, ...
          numel(prog.gap), prog.eff_pass(end), prog.primal(end), gap, model.ell);
end
% Multi-plane BCFW: gap 1e-4 in at most 100 oracle passes, its
% bounds against BMRM's; every multi-plane option is passed and honoured.
[model, prog] = bcfw(param, struct('lambda', lam, 'gap_threshold', 1e-4, 'num_passes', 2000, ...
                                   'multiPlane', 1, 'mpApproxPasses', 20, 'mpInactivePasses', 5, ...
                                   'mpBlockSteps', 1));
check(prog.exitflag == 2 && prog.gap(end) <= 1e-4 + 1e-12 && prog.eff_pass(end) <= 100, ...
      'bcfw multi-plane: exit %s, gap %g, %g effective passes', prog.exit, prog.gap(end), prog.eff_pass(end));
check(prog.dual(end) <= sm.Fp / m + 1e-12 && sm.Fd / m <= prog.primal(end) + 1e-12, ...
      'bcfw multi-plane bounds vs bmrm');
fprintf('bcfw multi-plane: %4d passes, %6.1f effective, gap %.2e\n', numel(prog.gap), prog.eff_pass(end), prog.gap(end));
[~, p0] = bcfw(param, struct('lambda', lam, 'num_passes', 3, 'gap_threshold', 0, 'multiPlane', 1, 'mpApproxPasses', 0));
[~, p1] = bcfw(param, struct('lambda', lam, 'num_passes', 3, 'gap_threshold', 0, 'multiPlane', 1, 'mpApproxPasses', 5));
check(p1.dual(3) > p0.dual(3), 'mpApproxPasses is honoured: dual %.12g vs %.12g', p1.dual(3), p0.dual(3));
expect_error(@() bcfw(param, struct('mpInactivePasses', 0)), 'bmrm:badArgument', 'mpInactivePasses');
% miniBatch >= n: every pass is an exact pass, so every row has a primal.
[~, pb] = bcfw(param, struct('lambda', lam, 'num_passes', 4, 'gap_threshold', 0, 'miniBatch', 1000, ...
                             'useCache', 0));
check(numel(pb.primal) == 4 && all(isfinite(pb.primal)), 'miniBatch is honoured: primal %s', mat2str(pb.primal));
expect_error(@() bcfw(param, struct('miniBatch', -1)), 'bmrm:badArgument', 'miniBatch');
expect_error(@() bcfw(param, struct('miniBatch', 8)), 'bmrm:badArgument', 'useCache = 0');
expect_error(@() bcfw(param, struct('mpApproxPasses', 1.5)), 'bmrm:badArgument', 'mpApproxPasses');
% An option the chosen algorithm would not use is an error naming it.
expect_error(@() bcfw(param, struct('algorithm', 'bmrm', 'useCache', 0)), 'bmrm:badArgument', 'useCache');
expect_error(@() bcfw(param, struct('TolRel', 1e-3)), 'bmrm:badArgument', 'TolRel');
expect_error(@() bcfw(param, struct('sample', 'uniform', 'gapDegree', 2)), 'bmrm:badArgument', 'gap_degree');
% The same seed gives the same w; num_passes and time_budget stop it.
[m1, p1] = bcfw(param, struct('lambda', lam, 'num_passes', 7, 'gap_threshold', 0, 'rand_seed', 3));
[m2, p2] = bcfw(param, struct('lambda', lam, 'num_passes', 7, 'gap_threshold', 0, 'rand_seed', 3));
check(isequal(m1.w, m2.w) && numel(p1.gap) == 7 && p1.exitflag == 0, ...
      'same seed: identical w after %d passes (exit %s)', numel(p1.gap), p1.exit);
[~, p3] = bcfw(param, struct('lambda', lam, 'num_passes', 1e6, 'gap_threshold', 0, 'time_budget', 0.2 / 60));
check(p3.exitflag == 3 && p3.time(end) < 5, 'time_budget: exit %s after %.2f s', p3.exit, p3.time(end));
out = evalc('bcfw(param, struct(''lambda'', lam, ''num_passes'', 3, ''verb'', 1));');
check(numel(strfind(out, 'pass ')) >= 2, 'verb prints the passes:\n%s', out);
% Ctrl-C inside the oracle.
slow = param;
slow.oracleFn = @(p, model, x, y) interrupting_oracle(p, model, x, y, param.oracleFn);
global oracle_calls
oracle_calls = 0;
expect_error(@() bcfw(slow, struct('lambda', lam)), 'bmrm:interrupted', 'stopped cleanly');
[model, prog] = bcfw(param, struct('lambda', lam));
check(prog.exitflag == 2, 'bcfw after an interrupt: exit %s', prog.exit);
% bcfw's errors.
bad = param; bad.oracleFn = @(p, model, x, y) error('my:oracle', 'oracle broke on purpose');
expect_error(@() bcfw(bad, struct('algorithm', 'bmrm')), 'bmrm:callbackError', 'oracle broke on purpose');
bad = param; bad.lossFn = @(p, yt, yp) NaN;
expect_error(@() bcfw(bad, struct('algorithm', 'bmrm')), 'bmrm:nonFinite', 'NaN');
% Labels that are cells: a hashFn is needed, and then they work.
cells = param;
cells.labels = cellfun(@(v) {v}, param.labels, 'UniformOutput', false);
cells.lossFn = @(p, yt, yp) param.lossFn(p, yt{1}, yp{1});
cells.featureFn = @(p, x, y) param.featureFn(p, x, y{1});
cells.oracleFn = @(p, model, x, y) {param.oracleFn(p, model, x, y{1})};
expect_error(@() bcfw(cells, struct('algorithm', 'bmrm')), 'bmrm:badLabel', 'hashFn');
cells.hashFn = @(p, y) sprintf('%d', y{1});
[model, prog] = bcfw(cells, struct('lambda', lambda_sum / m, 'algorithm', 'bmrm', 'TolRel', 1e-8));
check(abs(prog.primal(end) - sm.Fp / m) <= max(gap_b, prog.gap(end)) + 1e-12, ...
      'cell labels with hashFn: F %.12g vs %.12g', prog.primal(end), sm.Fp / m);
bad = param; bad = rmfield(bad, 'featureFn');
expect_error(@() bcfw(bad, struct()), 'bmrm:badArgument', 'featureFn');
expect_error(@() bcfw(param, struct('sample', 'sometimes')), 'bmrm:badArgument', 'sample');
expect_error(@() bcfw(param, struct('stepType', 5)), 'bmrm:badArgument', 'stepType');
expect_error(@() bcfw(param, struct('debug', 1)), 'bmrm:badArgument', 'unknown option ''debug''');
expect_error(@() bcfw(param, struct('gapDegree', 0)), 'bmrm:badArgument', 'gapDegree');

%% Input validation through the MEX.
mex_validation;

%% The flandmark/clandmark toolbox code.
toolbox_compat;

%% The BCFW codes' front ends.
front_ends;

fprintf('%d passed, %d failed\n', checks_passed, checks_failed);
if checks_failed > 0
  exit(1);
end
