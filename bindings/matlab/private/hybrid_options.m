function [o, level, param] = hybrid_options(who, param, options)
%HYBRID_OPTIONS gapBCFW's option parser mapped onto the gateway's options:
% every option it accepts is honoured; the others are errors naming them.
check_options(who, options, {'lambda', 'gap_threshold', 'num_passes', 'time_budget', 'sample', ...
  'gapDegree', 'useCache', 'cacheNu', 'cacheFactor', 'maxCacheSize', 'doCacheConsistencyCheck', ...
  'stepType', 'do_batch_step', 'gap_check', 'rand_seed', 'quit_passes_heuristic_gap', ...
  'quit_passes_heuristic_gap_eps_multiplyer', 'true_gap_when_converged', ...
  'output_model_before_batch_step', 'init_gap_value_for_cache', 'logging_level'});
opt = @(name, default) option(options, name, default);
o = bcfw_base_options(who, param, options, 1);
sample = opt('sample', 'gap');
switch sample
  case 'uniform', o.sampling = 0;
  case 'perm', o.sampling = 1;
  case 'gap', o.sampling = 2;
  case 'maxGap', o.sampling = 3;
  otherwise, error('bmrm:badArgument', '%s: unknown options.sample ''%s''', who, sample);
end
o.gap_degree = opt('gapDegree', 1);
step = opt('stepType', 2);
switch step
  case 0, o.step_type = 3;   % all steps: FW, pairwise and away compared
  case {1, 2, 3}, o.step_type = step - 1;
  otherwise, error('bmrm:badArgument', '%s: unknown options.stepType %g', who, step);
end
o.use_cache = double(logical(opt('useCache', true)));
o.cache_nu = opt('cacheNu', 0.01);
o.cache_factor = opt('cacheFactor', 0.25);
o.cache_size = opt('maxCacheSize', 100);
o.gap_check = opt('gap_check', 10);
o.seed = opt('rand_seed', 1);
o.line_search = 1;
o.weighted_averaging = 0;
if logical(opt('doCacheConsistencyCheck', false))
  unsupported(who, 'options.doCacheConsistencyCheck = true');
end
if logical(opt('do_batch_step', false))
  unsupported(who, 'options.do_batch_step = true (batch FW steps)');
end
% An exact gap pass as soon as the heuristic gaps sum below
% gap_threshold * eps_multiplyer (the result is still certified exactly).
if logical(opt('quit_passes_heuristic_gap', true))
  o.early_exact_factor = opt('quit_passes_heuristic_gap_eps_multiplyer', 0.8);
else
  o.early_exact_factor = 0;
end
if o.tol_abs == 0
  o.early_exact_factor = 0;   % its threshold, multiplier * gap_threshold, is 0
end
if ~logical(opt('true_gap_when_converged', true))
  unsupported(who, 'options.true_gap_when_converged = false');
end
if isfield(options, 'init_gap_value_for_cache')
  unsupported(who, 'options.init_gap_value_for_cache');
end
level = opt('logging_level', 1);
if level >= 2
  unsupported(who, sprintf('options.logging_level = %g (per-point gaps)', level));
elseif level >= 1
  o.log_every = 1;
elseif level > 0
  o.log_every = min(o.gap_check, 2^32 - 1);
end
if isfield(param, 'positivity') && ~isempty(param.positivity) && any(param.positivity(:))
  o.positivity = param.positivity;
end
if ~isfield(param, 'hashFn') || isempty(param.hashFn)
  param = rmfield_if(param, 'hashFn');
end

end

function s = rmfield_if(s, f)
if isfield(s, f)
  s = rmfield(s, f);
end
end
