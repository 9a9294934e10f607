function [model, gap_vec_heuristic, num_passes, progress] = solver_multiLambda_BCFW_hybrid(param, options)
%SOLVER_MULTILAMBDA_BCFW_HYBRID gapBCFW's grid of lambdas over bmrm.
%
%   [model, gap_vec_heuristic, num_passes, progress] = ...
%       solver_multiLambda_BCFW_hybrid(param, options)
%
% Solves for every options.lambda_values (default 10.^(4:-1:-3), taken in
% decreasing order) to options.gap_threshold (0.1), each solve warm-started
% as options.warm_start_type says: 'keep_primal' (default; w and the w_i are
% kept, the dual weights of the non-truth labels scale by
% lambda_new/lambda_old), 'keep_dual' (the dual weights are kept and w
% rebuilt from them at the new lambda; needs the corners: useCache or
% pairwise/away steps) or 'none' (a fresh start). The per-lambda options
% are solver_BCFW_hybrid's (sample, gapDegree, gap_check, stepType, useCache,
% cacheNu, cacheFactor, maxCacheSize, rand_seed, logging_level, ...) with the
% same restrictions. regularization_path true computes gapBCFW's
% eps-approximate path instead (regularization_path_eps 0.1,
% regularization_path_min_lambda 1e-5, regularization_path_a 0.9,
% regularization_path_b only 1 - a): one progress cell per breakpoint with
% lambda, lambda_low (the path's w is eps-optimal on [lambda_low, lambda]),
% gap, primal, model. Not supported, an error naming them: a joint
% num_passes or time_budget, check_lambda_change true.
%
% Outputs: model (at the last lambda: w, ell, dual), gap_vec_heuristic
% (NaN(n, 1)), num_passes (effective passes in all), progress: one cell per
% lambda with solver_BCFW_hybrid's fields plus model (w, ell, dual) and
% lambda.
who = 'solver_multiLambda_BCFW_hybrid';
if nargin < 2 || isempty(options)
  options = struct();
end
single = {'sample', 'gapDegree', 'gap_check', 'stepType', 'useCache', 'cacheNu', 'cacheFactor', ...
  'maxCacheSize', 'doCacheConsistencyCheck', 'rand_seed', 'quit_passes_heuristic_gap', ...
  'quit_passes_heuristic_gap_eps_multiplyer', 'logging_level', 'do_batch_step', ...
  'true_gap_when_converged'};
check_options(who, options, [single, {'lambda_values', 'gap_threshold', 'warm_start_type', ...
  'regularization_path', 'regularization_path_min_lambda', 'regularization_path_eps', ...
  'regularization_path_a', 'regularization_path_b', 'num_passes', 'time_budget', ...
  'check_lambda_change'}]);
use_path = isfield(options, 'regularization_path') && logical(options.regularization_path);
path_opts = {'regularization_path_min_lambda', 'regularization_path_eps', 'regularization_path_a', ...
             'regularization_path_b'};
for f = path_opts
  if ~use_path && isfield(options, f{1})
    error('bmrm:badArgument', '%s: options.%s needs options.regularization_path = true', who, f{1});
  end
end
if use_path
  for f = {'lambda_values', 'gap_threshold', 'warm_start_type'}
    if isfield(options, f{1})
      error('bmrm:badArgument', ['%s: options.%s has no effect on the regularization path ' ...
            '(gapBCFW ignores it there): remove it'], who, f{1});
    end
  end
end
for f = {'num_passes', 'time_budget'}
  if isfield(options, f{1})
    unsupported(who, sprintf('options.%s (a budget for all lambdas together)', f{1}));
  end
end
if isfield(options, 'check_lambda_change') && logical(options.check_lambda_change)
  unsupported(who, 'options.check_lambda_change = true');
end
warm = 'keep_primal';
if isfield(options, 'warm_start_type') && ~isempty(options.warm_start_type)
  warm = options.warm_start_type;
end
switch warm
  case 'keep_primal', is_warm = 1;
  case 'none', is_warm = 0;
  case 'keep_dual', is_warm = 2;
  otherwise, error('bmrm:badArgument', '%s: unknown options.warm_start_type ''%s''', who, warm);
end
lambdas = 10.^(4:-1:-3);
if isfield(options, 'lambda_values') && ~isempty(options.lambda_values)
  lambdas = options.lambda_values;
end
lambdas = sort(lambdas(:), 'descend');

% One lambda's options, checked by solver_BCFW_hybrid's rules on a dry run
% of its option parser (the same restrictions apply).
one = struct();
for f = single
  if isfield(options, f{1})
    one.(f{1}) = options.(f{1});
  end
end
if isfield(options, 'gap_threshold')
  one.gap_threshold = options.gap_threshold;
end
one.num_passes = 0;
[o, level] = hybrid_options(who, param, one);
o.num_passes = 0;   % no per-lambda budget: each lambda is solved to its gap
n = numel(param.patterns);
if use_path
  % gapBCFW's eps-approximate path: every breakpoint solved to a*eps, the
  % next lambda where the gap can reach (a + b)*eps, b = 1 - a.
  pa = pick(options, 'regularization_path_a', 0.9);
  pb = pick(options, 'regularization_path_b', 1 - pa);
  if abs(pb - (1 - pa)) > 1e-12
    unsupported(who, sprintf('options.regularization_path_b = %g (only 1 - regularization_path_a)', pb));
  end
  o.path_eps = pick(options, 'regularization_path_eps', 0.1);
  o.path_lambda_min = pick(options, 'regularization_path_min_lambda', 1e-5);
  o.path_a = pa;
  [m, p] = bcfw_call(who, param, o);
  progress = cell(numel(m), 1);
  for k = 1:numel(m)
    progress{k} = struct('lambda', p(k).lambda, 'lambda_low', p(k).lambda_low, 'gap', p(k).gap, ...
      'primal', p(k).primal, 'exit', p(k).exit, ...
      'model', struct('w', m(k).w, 'ell', m(k).ell, 'dual', m(k).dual));
  end
  model = struct('w', m(end).w, 'ell', m(end).ell, 'dual', m(end).dual);
  gap_vec_heuristic = NaN(n, 1);
  num_passes = p(end).oracle_calls / n;
  return;
end
o.lambdas = lambdas;
o.warm = is_warm;
[m, p] = bcfw_call(who, param, o);
progress = cell(numel(m), 1);
num_passes = 0;
for k = 1:numel(m)
  q = struct('lambda', m(k).lambda, 'model', struct('w', m(k).w, 'ell', m(k).ell, 'dual', m(k).dual));
  q.primal = p(k).primal;
  q.dual = p(k).dual;
  q.exit = p(k).exit;
  if level > 0
    q.time = p(k).time(p(k).model_pass);
    q.numPasses = p(k).eff_pass(p(k).model_pass);
    checked = find(isfinite(p(k).exact_gap));
    q.verifiedGap = p(k).exact_gap(checked);
    q.verifiedGapNumPasses = p(k).eff_pass(checked);
  end
  progress{k} = q;
  % eff_pass is cumulative over the solver's runs when it is kept.
  if is_warm == 1
    num_passes = p(k).eff_pass(end);
  else
    num_passes = num_passes + p(k).eff_pass(end);
  end
end
model = struct('w', m(end).w, 'ell', m(end).ell, 'dual', m(end).dual);
gap_vec_heuristic = NaN(n, 1);
end

function v = pick(options, name, default)
if isfield(options, name) && ~isempty(options.(name))
  v = options.(name);
else
  v = default;
end
end
