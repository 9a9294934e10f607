function [model, gap_vec_heuristic, num_passes, progress, cache, exact_gap_flag] = solver_BCFW_hybrid(param, options, model, gap_vec_heuristic, cache)
%SOLVER_BCFW_HYBRID gapBCFW's calling convention (Osokin et al. 2016) over bmrm.
%
%   [model, gap_vec_heuristic, num_passes, progress, cache, exact_gap_flag] = ...
%       solver_BCFW_hybrid(param, options)
%
% param as gapBCFW's: patterns, labels, lossFn(param, ytruth, ypred),
% oracleFn(param, model, x, y), featureFn(param, x, y), hashFn(y) (ONE
% argument, gapBCFW's convention), optional n, d, positivity (d elements,
% non-zero: w_j >= 0), using_sparse_features and cache_type_single (storage
% hints; bmrm picks sparse or dense per block itself).
%
% options, gapBCFW's names and defaults: lambda (1/n), gap_threshold (0.1),
% num_passes (200), time_budget (minutes, inf), sample ('gap'; 'uniform',
% 'perm', 'maxGap'), gapDegree (1), useCache (true), cacheNu (0.01), cacheFactor (0.25),
% maxCacheSize (100), stepType (2 pairwise; 0 all steps, 1 FW, 3 FW and
% away), gap_check (10; inf:
% only the final check), rand_seed (1), logging_level (1: the model of every
% pass in progress.models; 0.5: at the gap checks; 0: none),
% doCacheConsistencyCheck (false), do_batch_step (false),
% output_model_before_batch_step (no effect without batch steps),
% quit_passes_heuristic_gap (true) and quit_passes_heuristic_gap_eps_multiplyer
% (0.8): an exact gap pass as soon as the estimates sum below
% gap_threshold * multiplier; true_gap_when_converged (only true). Not supported, an error naming them:
% do_batch_step true, doCacheConsistencyCheck true,
% logging_level 2 or 3, init_gap_value_for_cache, a warm start without
% the cache (model or gap_vec_heuristic alone), a model at another lambda
% than its cache.
%
% Warm start: solver_BCFW_hybrid(param, options, model, gap_vec_heuristic,
% cache) with the outputs of a previous run continues from its dual state;
% with a cache alone (model = []) at a new options.lambda, the dual weights
% are kept and the model rebuilt from them (gapBCFW's behaviour).
%
% Outputs: model.w (the last iterate), model.ell (its b'*alpha: the dual is
% model.ell - lambda/2*||model.w||^2 = model.dual), model.wMat, model.ellMat,
% model.v (sum of the w_i, before positivity's truncation); gap_vec_heuristic
% the block-gap estimates; num_passes: effective passes
% (oracle calls / n); progress.models, time, numPasses, verifiedGap,
% verifiedGapModelId, verifiedGapNumPasses, lambda, and bmrm's primal, dual
% (certified bounds per pass); cache: the dual state (corners, weights,
% gap estimates; bmrm's own layout) for a warm start; exact_gap_flag:
% whether the last gap was computed exactly. With FW steps and no cache
% no block state is kept: cache is [], gap_vec_heuristic NaN, and no wMat.
who = 'solver_BCFW_hybrid';
if nargin < 1 || ~isstruct(param) || numel(param) ~= 1
  error('bmrm:badArgument', '%s: param must be a struct', who);
end
if nargin < 2 || isempty(options)
  options = struct();
end
if nargin < 3, model = []; end
if nargin < 4, gap_vec_heuristic = []; end
if nargin < 5, cache = []; end
[o, level, param] = hybrid_options(who, param, options);
n = numel(param.patterns);
o.export_dual = 1;
% A warm start: the cache a previous run returned is the dual state (gapBCFW
% rebuilds the model from it at options.lambda when no model is given);
% a model given with it must be the one the cache implies.
if ~isempty(cache)
  if ~isstruct(cache) || ~isfield(cache, 'psi') || ~isfield(cache, 'lambda')
    error('bmrm:badArgument', '%s: cache must be the cache output of a previous run', who);
  end
  if ~isempty(gap_vec_heuristic)
    if numel(gap_vec_heuristic) ~= n
      error('bmrm:badArgument', '%s: gap_vec_heuristic has %d entries for %d examples', who, numel(gap_vec_heuristic), n);
    end
    g = double(gap_vec_heuristic(:));
    g(~isfinite(g)) = inf;   % unknown
    cache.gap_estimate = g;
  end
  if ~isempty(model)
    if cache.lambda ~= o.lambda
      unsupported(who, ['a model from lambda ' num2str(cache.lambda) ' with its cache at lambda ' ...
                  num2str(o.lambda) ' (pass the cache alone: the model is rebuilt from it)']);
    end
    implied = block_model(struct(), cache, o.lambda, n);
    w = implied.v;
    if isfield(o, 'positivity')
      w(o.positivity(:) ~= 0) = max(w(o.positivity(:) ~= 0), 0);
    end
    if ~isfield(model, 'w') || numel(model.w) ~= numel(w) || ...
       norm(model.w(:) - w) > 1e-9 * max(1, norm(w))
      error('bmrm:badArgument', '%s: model is not the one its cache gives (pass them unchanged)', who);
    end
  end
  o.dual = cache;
elseif ~isempty(model) || ~isempty(gap_vec_heuristic)
  unsupported(who, 'a warm start from model or gap_vec_heuristic without the cache');
end
[m, p, states] = bcfw_call(who, param, o);
model = struct('w', m.w, 'ell', m.ell, 'dual', m.dual);
cache = states{end};
if isempty(cache)
  gap_vec_heuristic = NaN(n, 1);   % FW steps without a cache keep no block state
else
  gap_vec_heuristic = cache.gap_estimate;
  model = block_model(model, cache, o.lambda, n);
end
num_passes = p.eff_pass(end);
progress = struct();
if level > 0
  progress.models = cell(numel(p.model_pass), 1);
  for k = 1:numel(p.model_pass)
    progress.models{k} = struct('w', p.model_w(:, k), 'ell', p.model_ell(k));
  end
  progress.time = p.time(p.model_pass);
  progress.numPasses = p.eff_pass(p.model_pass);
  checked = find(isfinite(p.exact_gap));
  progress.verifiedGap = p.exact_gap(checked);
  % The model of the pass whose iterate the exact gap was computed at.
  [~, progress.verifiedGapModelId] = ismember(checked, p.model_pass);
  progress.verifiedGapNumPasses = p.eff_pass(checked);
  progress.lambda = o.lambda;
end
progress.primal = p.primal;
progress.dual = p.dual;
progress.exit = p.exit;
exact_gap_flag = isfinite(p.exact_gap(end)) || any(p.exitflag == [1 2]);
end

