function [model, progress] = bcfw(param, options)
%BCFW Block-coordinate Frank-Wolfe for structured SVMs (the bmrm library).
%
% Synopsis:
%   [model, progress] = bcfw(param)
%   [model, progress] = bcfw(param, options)
%
% Solves, in the calling convention of the BCFW MATLAB code (BCFWstruct,
% gapBCFW's solver_BCFW_hybrid),
%
%   min_w 0.5*lambda*||w||^2 + 1/n sum_i max_y [L(y_i, y) - <w, phi(x_i, y_i) - phi(x_i, y)>]
%
% param (a struct; other fields are passed to the functions untouched):
%   .patterns   cell array of the n inputs x_i (anything)
%   .labels     cell array of the n labels y_i
%   .lossFn     L = lossFn(param, ytruth, ypred)
%   .oracleFn   ypred = oracleFn(param, model, x, y), the loss-augmented
%               decoding at model.w
%   .featureFn  phi = featureFn(param, x, y), a full or sparse vector of a
%               fixed length d
%   .positivity (optional) d elements; non-zero: w_j >= 0 (gapBCFW's)
%   .hashFn     (optional) key = hashFn(param, y), a string or numeric array
%               identifying a label; without it, labels must be numeric, char
%               or logical arrays and are identified by their class, size and
%               bytes (64-bit FNV-1a). The caches and the pairwise/away steps
%               tell labels apart by this key.
%
% options (a struct; every field optional), with the BCFW code's defaults:
%   .lambda         (1/n)
%   .num_passes     most passes over the data (200)
%   .gap_threshold  stop when the duality gap <= gap_threshold (0.1)
%   .gap_check      an exact gap pass every gap_check passes (10)
%   .quit_passes_heuristic_gap (true), ..._eps_multiplyer (0.8): an exact
%                   gap pass as soon as the block-gap estimates sum below
%                   gap_threshold * multiplier (gapBCFW's)
%   .sample         'uniform', 'perm', 'gap' or 'maxGap' ('gap')
%   .gapDegree      gap sampling proportional to gap^gapDegree (1)
%   .stepType       0 all steps (FW, pairwise and away compared), 1 FW,
%                   2 pairwise, 3 FW and away (2)
%   .do_line_search (1); 0: the step 2n/(k + 2n)
%   .do_weighted_averaging (0)
%   .useCache (1), .cacheNu (0.01), .cacheFactor (0.25), .maxCacheSize (100)
%   .multiPlane     multi-plane BCFW (0): after each pass of oracle steps,
%                   approximate passes towards the best kept corner of each
%                   block, no oracle call (docs/bcfw.md)
%   .mpApproxPasses most approximate passes after an oracle pass (10)
%   .mpTimed        1: stop them once their dual increase per second falls
%                   below the oracle pass's (timing-dependent results) (0)
%   .mpInactivePasses drop a corner without weight unused this many
%                   oracle passes (10, >= 1)
%   .mpBlockSteps   approximate steps on a block right after its oracle
%                   call (0)
%   .miniBatch      mini-batch BCFW (0: one block at a time): the oracle
%                   answers this many blocks at one w, then their steps are
%                   taken in a fixed order; >= n: every pass is an exact
%                   pass (its own certificate) and one step per block;
%                   needs useCache = 0 (multiPlane works with it)
%   .rand_seed      (1)
%   .time_budget    minutes (inf)
%   .verb           print every verb passes (0)
%   .algorithm      'bcfw' (default), or a bundle method over the same
%                   oracles: 'bmrm', 'proxbmrm', 'pbmrm', 'proxpbmrm' (with
%                   .TolRel (1e-3), .TolAbs (0), .MaxIter (inf), .num_parts)
%
% Outputs:
%   model     .w the weights (d x 1): BCFW's last iterate (the weighted
%             average under do_weighted_averaging); .ell the dual's loss
%             term l = sum_i l_i of that same point and .dual its dual value
%             (= ell - 0.5*lambda*||w||^2 without positivity); for the
%             bundle methods .w is the best point and .dual the lower bound
%   progress  per pass (per iteration for the bundle methods): .primal,
%             .dual, .gap (primal - dual), .eff_pass, .time, .oracle_calls;
%             and .exitflag (1/2 converged, 0 num_passes, 3 time_budget);
%             .certified is false when an oracle answer was below the
%             ground truth (clipped to it): then the gap certifies nothing
%
% Errors as in bmrm.m: 'bmrm:callbackError' (with the function's own
% message), 'bmrm:nonFinite', 'bmrm:badOutput', 'bmrm:badLabel',
% 'bmrm:badArgument', 'bmrm:interrupted' (Ctrl-C).

if nargin < 1 || ~isstruct(param) || numel(param) ~= 1
  error('bmrm:badArgument', 'bcfw: usage [model, progress] = bcfw(param, options) with param a struct');
end
if nargin < 2 || isempty(options)
  options = struct();
end
if ~isstruct(options) || numel(options) ~= 1
  error('bmrm:badArgument', 'bcfw: options must be a struct');
end
for f = {'patterns', 'labels', 'lossFn', 'oracleFn', 'featureFn'}
  if ~isfield(param, f{1})
    error('bmrm:badArgument', 'bcfw: param.%s is missing', f{1});
  end
end
for f = {'lossFn', 'oracleFn', 'featureFn', 'hashFn'}
  if isfield(param, f{1}) && ~isempty(param.(f{1})) && ~isa(param.(f{1}), 'function_handle')
    error('bmrm:badArgument', 'bcfw: param.%s must be a function handle', f{1});
  end
end
if ~iscell(param.patterns) || ~iscell(param.labels) || numel(param.patterns) ~= numel(param.labels)
  error('bmrm:badArgument', 'bcfw: param.patterns and param.labels must be cell arrays of one length');
end
n = numel(param.patterns);
if n == 0
  error('bmrm:badArgument', 'bcfw: no examples');
end

known = {'lambda', 'num_passes', 'gap_threshold', 'gap_check', 'sample', 'stepType', ...
         'do_line_search', 'do_weighted_averaging', 'useCache', 'cacheNu', 'cacheFactor', ...
         'maxCacheSize', 'rand_seed', 'time_budget', 'verb', 'algorithm', 'TolRel', ...
         'TolAbs', 'MaxIter', 'num_parts', 'gapDegree', 'quit_passes_heuristic_gap', ...
         'quit_passes_heuristic_gap_eps_multiplyer', 'multiPlane', 'mpApproxPasses', ...
         'mpTimed', 'mpInactivePasses', 'mpBlockSteps', 'miniBatch'};
names = fieldnames(options);
for k = 1:numel(names)
  if ~any(strcmp(names{k}, known))
    error('bmrm:badArgument', 'bcfw: unknown option ''%s''', names{k});
  end
end
opt = @(name, default) option(options, name, default);

% The dimension: the features of the first example.
phi = param.featureFn(param, param.patterns{1}, param.labels{1});
if ~isnumeric(phi) || isempty(phi) || ~isvector(phi)
  error('bmrm:badOutput', 'bcfw: param.featureFn(param, x, y) must return a vector');
end

algorithm = lower(opt('algorithm', 'bcfw'));
if ~ischar(algorithm) || ~any(strcmp(algorithm, {'bcfw', 'bmrm', 'proxbmrm', 'pbmrm', 'proxpbmrm', 'sgd'}))
  error('bmrm:badArgument', 'bcfw: unknown options.algorithm');
end
sample = lower(opt('sample', 'gap'));
sampling = find(strcmp(sample, {'uniform', 'perm', 'gap', 'maxgap'})) - 1;
if ~ischar(sample) || isempty(sampling)
  error('bmrm:badArgument', 'bcfw: options.sample must be ''uniform'', ''perm'', ''gap'' or ''maxGap''');
end
step = opt('stepType', 2);
if ~isnumeric(step) || ~isscalar(step) || ~any(step == [0 1 2 3])
  error('bmrm:badArgument', ['bcfw: options.stepType must be 0 (all steps), 1 (FW), ' ...
        '2 (pairwise) or 3 (FW and away)']);
end

% Options of BCFW and options of the bundle methods: one given to the other
% kind of algorithm would not be used, so it is an error.
bcfw_only = {'num_passes', 'gap_threshold', 'gap_check', 'sample', 'stepType', ...
             'do_line_search', 'do_weighted_averaging', 'useCache', 'cacheNu', ...
             'cacheFactor', 'maxCacheSize', 'gapDegree', 'quit_passes_heuristic_gap', ...
             'quit_passes_heuristic_gap_eps_multiplyer', 'multiPlane', 'mpApproxPasses', ...
             'mpTimed', 'mpInactivePasses', 'mpBlockSteps', 'miniBatch'};
bundle_only = {'TolRel', 'TolAbs', 'MaxIter', 'num_parts'};
is_bcfw = strcmp(algorithm, 'bcfw');
if is_bcfw
  unused = intersect(names, bundle_only);
else
  unused = intersect(names, bcfw_only);
end
if ~isempty(unused)
  error('bmrm:badArgument', 'bcfw: options.%s is not used by options.algorithm ''%s''', ...
        unused{1}, algorithm);
end

o = struct();
o.algorithm = algorithm;
o.dim = numel(phi);
o.lambda = opt('lambda', 1 / n);
o.seed = opt('rand_seed', 1);
o.time_limit = 60 * opt('time_budget', inf);
o.verb = opt('verb', 0);
if is_bcfw
  o.num_passes = opt('num_passes', 200);
  o.gap_check = opt('gap_check', 10);
  o.sampling = sampling;
  o.step_type = mod(step - 1, 4);  % 1 FW -> 0, 2 pairwise -> 1, 3 away -> 2, 0 all -> 3
  o.gap_degree = opt('gapDegree', 1);
  if logical(opt('quit_passes_heuristic_gap', true))
    o.early_exact_factor = opt('quit_passes_heuristic_gap_eps_multiplyer', 0.8);
  else
    o.early_exact_factor = 0;
  end
  o.line_search = opt('do_line_search', 1);
  o.weighted_averaging = opt('do_weighted_averaging', 0);
  o.use_cache = opt('useCache', 1);
  o.cache_nu = opt('cacheNu', 0.01);
  o.cache_factor = opt('cacheFactor', 0.25);
  o.cache_size = opt('maxCacheSize', 100);
  o.multi_plane = opt('multiPlane', 0);
  o.mp_approx_passes = opt('mpApproxPasses', 10);
  o.mp_timed = opt('mpTimed', 0);
  o.mp_inactive_passes = opt('mpInactivePasses', 10);
  o.mp_block_steps = opt('mpBlockSteps', 0);
  o.mini_batch = opt('miniBatch', 0);
  o.tol_rel = 0;
  o.tol_abs = opt('gap_threshold', 0.1);
  o.max_iterations = inf;           % the engine counts passes (num_passes)
  if o.tol_abs == 0
    o.early_exact_factor = 0;       % its threshold, multiplier * gap_threshold, is 0
  end
else
  o.tol_rel = opt('TolRel', 1e-3);
  o.tol_abs = opt('TolAbs', 0);
  o.max_iterations = opt('MaxIter', inf);
  o.num_parts = opt('num_parts', 0);
end
if isfield(param, 'positivity') && ~isempty(param.positivity) && any(param.positivity(:))
  o.positivity = param.positivity;
end
if is_bcfw
  mp = {'mpApproxPasses', 'mp_approx_passes', 0; 'mpInactivePasses', 'mp_inactive_passes', 1; ...
        'mpBlockSteps', 'mp_block_steps', 0; 'miniBatch', 'mini_batch', 0};
  for k = 1:size(mp, 1)
    v = o.(mp{k, 2});
    if ~isscalar(v) || ~isnumeric(v) || ~isreal(v) || v ~= round(v) || v < mp{k, 3} || v >= 2^32
      error('bmrm:badArgument', 'bcfw: options.%s must be an integer >= %d below 2^32', mp{k, 1}, mp{k, 3});
    end
  end
  if o.mini_batch > 1 && logical(o.use_cache)
    error('bmrm:badArgument', 'bcfw: options.miniBatch > 1 needs useCache = 0 (the cache is not used in batches)');
  end
end
fields = setdiff(fieldnames(o), {'positivity'});
for k = 1:numel(fields)
  v = o.(fields{k});
  if ~ischar(v) && (~(isnumeric(v) || islogical(v)) || ~isscalar(v) || ~isreal(v) || isnan(v) || v < 0)
    error('bmrm:badArgument', 'bcfw: the option behind %s must be a non-negative real scalar', fields{k});
  end
end
if is_bcfw && (~(o.gap_degree > 0) || ~isfinite(o.gap_degree))
  error('bmrm:badArgument', 'bcfw: options.gapDegree must be positive and finite');
end
if ~(o.lambda > 0) || ~isfinite(o.lambda)
  error('bmrm:badArgument', 'bcfw: options.lambda must be positive and finite');
end

try
  [model, progress] = bmrm_mex('bcfw', param, o);
catch err
  rethrow_mex(err);
end
end
