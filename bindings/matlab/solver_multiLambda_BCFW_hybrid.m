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
% same restrictions. Not supported, an error naming them:
% regularization_path true (and its regularization_path_*
% options), a joint num_passes or time_budget, check_lambda_change true.
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
if isfield(options, 'regularization_path') && logical(options.regularization_path)
  unsupported(who, 'options.regularization_path = true');
end
for f = {'regularization_path_min_lambda', 'regularization_path_eps', 'regularization_path_a', ...
         'regularization_path_b', 'num_passes', 'time_budget'}
  if isfield(options, f{1})
    unsupported(who, sprintf('options.%s', f{1}));
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
o.lambdas = lambdas;
o.warm = is_warm;
o.num_passes = 0;   % no per-lambda budget: each lambda is solved to its gap
[m, p] = bcfw_call(who, param, o);
n = numel(param.patterns);
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
