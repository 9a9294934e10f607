% The three BCFW front ends (gapBCFW, BCFWstruct, gapBCFW's multi-lambda)
% on a multiclass SVM, in each code's own calling style, against bcfw.m and
% BMRM's certified bounds on the same problem. Run from run_tests.m.
K = 3; d = 6; m = 90;
[X, y] = mc_data(m, d, K, 11);
lambda_sum = 1.2;
lam = lambda_sum / m;
[Wm, sm] = bmrm(struct('X', X, 'y', y, 'K', K), @mc_risk, lambda_sum, struct('TolRel', 1e-9));
Fp = sm.Fp / m; Fd = sm.Fd / m;   % min F is in [Fd, Fp]

%% gapBCFW: demo_ocr.m's style (param.n, param.d, a one-argument hashFn).
param = mc_param(X, y, K);
param.hashFn = @(label) sprintf('%d', label);
param.n = numel(param.patterns);
phi1 = param.featureFn(param, param.patterns{1}, param.labels{1});
param.d = length(phi1);
param.using_sparse_features = issparse(phi1);
options = struct;
options.lambda = lam;
options.gap_threshold = 1e-4;
options.num_passes = 400;
[model, gap_vec, num_passes, progress, cache, exact_gap_flag] = solver_BCFW_hybrid(param, options);
check(isfield(model, 'w') && isfield(model, 'ell') && numel(model.w) == param.d, 'gapBCFW model fields');
for f = {'models', 'time', 'numPasses', 'verifiedGap', 'verifiedGapModelId', 'verifiedGapNumPasses', 'lambda'}
  check(isfield(progress, f{1}), 'gapBCFW progress.%s exists', f{1});
end
check(numel(gap_vec) == m && all(gap_vec >= -1e-12) && isstruct(cache) && exact_gap_flag, 'gapBCFW outputs 2, 5, 6 (min gap %g)', min(gap_vec));
check(abs(sum(gap_vec) - progress.verifiedGap(end)) <= 1e-9, 'gap_vec_heuristic sums to the verified gap %g (%g)', ...
      progress.verifiedGap(end), sum(gap_vec));
check(size(model.wMat, 2) == m && numel(model.ellMat) == m && norm(sum(model.wMat, 2) - model.w) <= 1e-12 && ...
      abs(sum(model.ellMat) - model.ell) <= 1e-12, 'model.wMat and model.ellMat add up to w and ell');
check(progress.verifiedGap(end) <= 1e-4 && num_passes == progress.numPasses(end), ...
      'gapBCFW converged: verified gap %g, %g effective passes', progress.verifiedGap(end), num_passes);
check(numel(progress.models) == numel(progress.time) && all(progress.verifiedGapModelId >= 1), 'one model per pass');
last = progress.models{progress.verifiedGapModelId(end)};
check(isequal(last.w, model.w) && last.ell == model.ell, 'the verified model is the returned one');
dual = model.ell - 0.5 * lam * (model.w' * model.w);
check(dual <= Fp + 1e-12 && dual >= Fd - 1e-4 - 1e-12, 'gapBCFW dual %.12g within [%.12g - gap, %.12g]', dual, Fd, Fp);
primal = 0.5 * lam * (model.w' * model.w) + mean(arrayfun(@(i) hinge(param, model, i), 1:m));
check(primal - dual <= 1e-4 + 1e-12 && primal >= Fd - 1e-12, 'gapBCFW: primal %.12g - dual %.12g', primal, dual);
% A warm start (gapBCFW's outputs passed back) after a short run: it
% continues from the dual state, and needs fewer passes than a fresh start.
short = setfield(options, 'num_passes', 5);
short.gap_threshold = 0;
[m1, g1, n1, p1, c1] = solver_BCFW_hybrid(param, short);
[m2, g2, n2, p2, c2, f2] = solver_BCFW_hybrid(param, options, m1, g1, c1);
check(f2 && p2.verifiedGap(end) <= 1e-4, 'warm start converges: gap %g', p2.verifiedGap(end));
check(p2.dual(1) >= m1.dual - 1e-12, 'the warm start begins at the saved dual %.12g (first %.12g)', m1.dual, p2.dual(1));
check(n1 + n2 < num_passes + 5, 'warm start: %.1f + %.1f effective passes vs %.1f from scratch', n1, n2, num_passes);
d2 = m2.ell - 0.5 * lam * (m2.w' * m2.w);
check(d2 <= Fp + 1e-12, 'warm start: dual %.12g <= %.12g', d2, Fp);
bad = m1; bad.w = bad.w + 1;
expect_error(@() solver_BCFW_hybrid(param, options, bad, g1, c1), 'bmrm:badArgument', 'model is not the one');
badc = c1; badc.alpha = 2 * badc.alpha + 1;
expect_error(@() solver_BCFW_hybrid(param, options, [], [], badc), 'bmrm:badArgument', 'weights sum');
% The cache alone at another lambda (gapBCFW rebuilds the model): a valid bound.
[m3, ~, ~, p3] = solver_BCFW_hybrid(param, setfield(options, 'lambda', 3 * lam), [], [], c1);
[~, s3] = bmrm(struct('X', X, 'y', y, 'K', K), @mc_risk, 3 * lam * m, struct('TolRel', 1e-9));
check(p3.dual(1) <= s3.Fp / m + 1e-12 && m3.dual <= s3.Fp / m + 1e-12, 'cache at 3 lambda: dual %.12g <= %.12g', ...
      p3.dual(1), s3.Fp / m);
fprintf('bcfw gapBCFW warm start: %.1f + %.1f effective passes (%.1f fresh)\n', n1, n2, num_passes);
% quit_passes_heuristic_gap (default true): exact passes also before
% gap_check passes when the estimates say the gap is small; false: only
% every gap_check passes.
check(any(mod(progress.verifiedGapModelId, 10) ~= 0), 'heuristic quits: exact passes at %s', ...
      mat2str(progress.verifiedGapModelId'));
[~, ~, ~, pq] = solver_BCFW_hybrid(param, setfield(options, 'quit_passes_heuristic_gap', false));
check(all(mod(pq.verifiedGapModelId, 10) == 0), 'no heuristic quits: exact passes at %s', ...
      mat2str(pq.verifiedGapModelId'));
% The same problem through bcfw.m (two-argument hash): the same run.
p2 = param; p2.hashFn = @(p, label) sprintf('%d', label);
p2 = rmfield(p2, {'n', 'd', 'using_sparse_features'});
[mb, pb] = bcfw(p2, struct('lambda', lam, 'gap_threshold', 1e-4, 'num_passes', 400, 'maxCacheSize', 100));
check(isequal(mb.w, model.w) && mb.ell == model.ell, 'gapBCFW and bcfw.m give the same w and ell');
fprintf('bcfw gapBCFW front end: %d passes, %.1f effective, dual %.10g, bmrm [%.10g, %.10g]\n', ...
        numel(progress.time), num_passes, dual, Fd, Fp);
% gapBCFW's other variants: all steps, maxGap sampling, gapDegree 2; each
% gives bounds consistent with BMRM's and differs from the default run;
% maxGap, which gapBCFW warns stalls on stale estimates, gets 100 passes.
variants = {struct('stepType', 0), struct('sample', 'maxGap'), struct('gapDegree', 2), ...
            struct('stepType', 3, 'sample', 'perm', 'useCache', false)};
for k = 1:numel(variants)
  vo = variants{k};
  vo.lambda = lam; vo.gap_threshold = 1e-4; vo.num_passes = 2000; vo.logging_level = 0;
  tol = 1e-4;
  if isfield(vo, 'sample') && strcmp(vo.sample, 'maxGap')
    vo.num_passes = 100; tol = 1e-2;
  end
  [vm, ~, vnp, vp, ~, vflag] = solver_BCFW_hybrid(param, vo);
  vd = vm.ell - 0.5 * lam * (vm.w' * vm.w);
  vprimal = 0.5 * lam * (vm.w' * vm.w) + mean(arrayfun(@(i) hinge(param, vm, i), 1:m));
  check(vflag && vprimal - vd <= tol + 1e-12 && vd <= Fp + 1e-12 && vprimal >= Fd - 1e-12, ...
        'gapBCFW variant %d: primal %.12g, dual %.12g, bmrm [%.12g, %.12g]', k, vprimal, vd, Fd, Fp);
  check(~isequal(vm.w, model.w), 'gapBCFW variant %d runs differently from the default', k);
  fprintf('bcfw gapBCFW variant %d: %.1f effective passes, gap %.2e\n', k, vnp, vprimal - vd);
end
% Positivity: the constrained weights are >= 0 exactly; without it some are negative.
pos = zeros(param.d, 1); pos(1:2:end) = 1;
[free_model] = solver_BCFW_hybrid(param, setfield(options, 'logging_level', 0));
check(any(free_model.w(pos == 1) < 0), 'without positivity some constrained weights are negative');
pp = param; pp.positivity = pos;
[pm, ~, ~, pprog] = solver_BCFW_hybrid(pp, options);
check(all(pm.w(pos == 1) >= 0), 'positivity: min constrained weight %g', min(pm.w(pos == 1)));
check(pm.dual <= pprog.primal(end) + 1e-12 && pprog.primal(end) - pm.dual <= 1e-3, 'positivity: dual %g <= primal %g', ...
      pm.dual, pprog.primal(end));
check(pprog.primal(end) >= Fd - 1e-12, 'the constrained optimum is above the free one');
% Options: unknown, and accepted-but-unsupported, are errors naming them.
expect_error(@() solver_BCFW_hybrid(param, struct('lambda', lam, 'sampel', 'gap')), 'bmrm:badArgument', 'sampel');
expect_error(@() solver_BCFW_hybrid(param, struct('stepType', 4)), 'bmrm:badArgument', 'stepType');
expect_error(@() solver_BCFW_hybrid(param, struct('gapDegree', -1)), 'bmrm:badArgument', 'gap_degree');
expect_error(@() solver_BCFW_hybrid(param, struct('logging_level', 2)), 'bmrm:unsupported', 'logging_level');
expect_error(@() solver_BCFW_hybrid(param, struct('do_batch_step', true)), 'bmrm:unsupported', 'do_batch_step');
expect_error(@() solver_BCFW_hybrid(param, options, model, gap_vec), 'bmrm:unsupported', 'without the cache');
expect_error(@() solver_BCFW_hybrid(setfield(param, 'positivity', [1 0]), options), 'bmrm:badArgument', 'positivity');

%% BCFWstruct: its defaults (uniform, FW, weighted averaging), debug and test_data.
[Xt, yt] = mc_data(40, d, K, 12);
test = mc_param(Xt, yt, K);
bp = mc_param(X, y, K);
bp.constraintFn = bp.oracleFn;   % svm-struct's name, as BCFWstruct accepts
bp = rmfield(bp, 'oracleFn');
opts = struct('lambda', lam, 'num_passes', 30, 'debug', 1, 'gap_threshold', 0, ...
              'test_data', struct('patterns', {test.patterns}, 'labels', {test.labels}));
[model, progress] = solverBCFW(bp, opts);
for f = {'primal', 'dual', 'eff_pass', 'train_error', 'test_error'}
  check(isfield(progress, f{1}) && numel(progress.(f{1})) == 30, 'BCFWstruct progress.%s per pass', f{1});
end
check(all(progress.dual <= Fp + 1e-12) && all(progress.primal >= Fd - 1e-12), 'BCFWstruct bounds per pass');
check(all(progress.train_error >= 0 & progress.train_error <= 1) && progress.test_error(end) < 0.5, ...
      'BCFWstruct errors: train %g, test %g', progress.train_error(end), progress.test_error(end));
% The certificate of the returned (averaged) w: its own ell.
dual = model.ell - 0.5 * lam * (model.w' * model.w);
check(dual <= Fp + 1e-12, 'averaged ell gives dual %.12g <= certified optimum %.12g', dual, Fp);
check(abs(dual - progress.dual(end)) <= 1e-12 * max(1, abs(dual)), 'model.ell matches the last logged dual');
primal = 0.5 * lam * (model.w' * model.w) + mean(arrayfun(@(i) hinge(mc_param(X, y, K), model, i), 1:m));
check(abs(primal - progress.primal(end)) <= 1e-12, 'progress.primal is the primal of the returned w');
fprintf('bcfw BCFWstruct front end: primal %.10g, dual %.10g after 30 passes, test error %.3f\n', ...
        progress.primal(end), dual, progress.test_error(end));
[mf, pf] = bcfw(mc_param(X, y, K), struct('lambda', lam, 'num_passes', 30, 'gap_threshold', 0, ...
         'sample', 'uniform', 'stepType', 1, 'useCache', 0, 'do_weighted_averaging', 1));
check(isequal(mf.w, model.w), 'BCFWstruct defaults = bcfw.m with uniform, FW, no cache, averaging');
expect_error(@() solverBCFW(bp, struct('debug_multiplier', 10)), 'bmrm:unsupported', 'debug_multiplier');
expect_error(@() solverBCFW(bp, struct('sample', 'gap')), 'bmrm:badArgument', 'sample');
expect_error(@() solverBCFW(bp, struct('useCache', 1)), 'bmrm:badArgument', 'useCache');
% Without debug BCFWstruct still returns progress with its fields, empty
% (`progress.primal` must not fail on an empty struct).
[~, pq] = solverBCFW(bp, struct('lambda', lam, 'num_passes', 3));
for f = {'primal', 'dual', 'eff_pass', 'train_error'}
  check(isfield(pq, f{1}) && isempty(pq.(f{1})), 'BCFWstruct progress.%s is there, empty, without debug', f{1});
end
check(~isfield(pq, 'test_error'), 'no progress.test_error without test_data');
[~, pq] = solverBCFW(bp, struct('lambda', lam, 'num_passes', 3, ...
    'test_data', struct('patterns', {test.patterns}, 'labels', {test.labels})));
check(isfield(pq, 'test_error') && isempty(pq.test_error) && isempty(pq.primal), ...
      'BCFWstruct progress.test_error is there, empty, with test_data and without debug');

%% gapBCFW's multi-lambda grid, warm-started (keep_primal) and not.
lams = lam * [10 1 0.3];
mo = struct('lambda_values', lams, 'gap_threshold', 1e-4, 'logging_level', 0);
[model, ~, np_warm, progress] = solver_multiLambda_BCFW_hybrid(param, mo);
[~, ~, np_cold, pc] = solver_multiLambda_BCFW_hybrid(param, setfield(mo, 'warm_start_type', 'none'));
check(numel(progress) == 3 && progress{end}.lambda == min(lams), 'one progress cell per lambda, decreasing');
for k = 1:3
  lk = progress{k}.lambda;
  [~, sk] = bmrm(struct('X', X, 'y', y, 'K', K), @mc_risk, lk * m, struct('TolRel', 1e-9));
  mk = progress{k}.model;
  dk = mk.ell - 0.5 * lk * (mk.w' * mk.w);
  check(dk <= sk.Fp / m + 1e-12 && dk >= sk.Fd / m - 1e-4 - 1e-12, 'lambda %g: dual %.12g vs bmrm [%.12g, %.12g]', ...
        lk, dk, sk.Fd / m, sk.Fp / m);
  check(abs(pc{k}.primal(end) - progress{k}.primal(end)) <= 2e-4, 'lambda %g: warm and cold agree', lk);
end
fprintf('bcfw multi-lambda: %.1f effective passes warm, %.1f cold\n', np_warm, np_cold);
[~, ~, np_dual, pd] = solver_multiLambda_BCFW_hybrid(param, setfield(mo, 'warm_start_type', 'keep_dual'));
for k = 1:3
  check(abs(pd{k}.primal(end) - progress{k}.primal(end)) <= 2e-4 && pd{k}.dual(end) <= progress{k}.primal(end) + 1e-4, ...
        'keep_dual at lambda %g agrees with keep_primal', pd{k}.lambda);
end
fprintf('bcfw multi-lambda keep_dual: %.1f effective passes\n', np_dual);
fw = setfield(setfield(mo, 'warm_start_type', 'keep_dual'), 'stepType', 1);
expect_error(@() solver_multiLambda_BCFW_hybrid(param, setfield(fw, 'useCache', false)), ...
             'bmrm:unsupported', 'keeping the dual');
% gapBCFW's eps-approximate regularization path: every breakpoint's w is
% eps-optimal on [lambda_low, lambda], checked at a lambda inside against
% an independent BMRM lower bound.
po = struct('regularization_path', true, 'regularization_path_eps', 0.1, ...
            'regularization_path_min_lambda', 0.5 * lam, 'logging_level', 0);
[pmodel, ~, np_path, pprog] = solver_multiLambda_BCFW_hybrid(param, po);
check(numel(pprog) >= 2 && pprog{end}.lambda_low <= 0.5 * lam, '%d breakpoints down to %g', numel(pprog), ...
      pprog{end}.lambda_low);
for k = [1, numel(pprog)]
  lo = max(pprog{k}.lambda_low, 0.5 * lam);
  lk = sqrt(lo * pprog{k}.lambda);
  wk = pprog{k}.model.w;
  fk = 0.5 * lk * (wk' * wk) + mean(arrayfun(@(i) hinge(param, struct('w', wk), i), 1:m));
  [~, sk] = bmrm(struct('X', X, 'y', y, 'K', K), @mc_risk, lk * m, struct('TolRel', 1e-9));
  check(fk - sk.Fd / m <= 0.1 + 1e-12, 'path breakpoint %d at lambda %g: gap %g <= eps', k, lk, fk - sk.Fd / m);
  check(pprog{k}.model.dual <= pprog{k}.primal + 1e-12, 'breakpoint %d: dual <= primal', k);
end
fprintf('bcfw regularization path: %d breakpoints, %.1f effective passes\n', numel(pprog), np_path);
expect_error(@() solver_multiLambda_BCFW_hybrid(param, setfield(po, 'regularization_path_b', 0.5)), ...
             'bmrm:unsupported', 'regularization_path_b');
expect_error(@() solver_multiLambda_BCFW_hybrid(param, setfield(po, 'lambda_values', [1 2])), ...
             'bmrm:badArgument', 'lambda_values');
expect_error(@() solver_multiLambda_BCFW_hybrid(param, setfield(mo, 'lambda_valuez', 1)), ...
             'bmrm:badArgument', 'lambda_valuez');
