function [model, progress] = solverBCFW(param, options)
%SOLVERBCFW BCFWstruct's calling convention (Lacoste-Julien et al. 2013) over bmrm.
%
%   [model, progress] = solverBCFW(param, options)
%
% param as BCFWstruct's: patterns, labels, lossFn(param, ytruth, ypred),
% oracleFn(param, model, x, y) (or constraintFn, svm-struct's name),
% featureFn(param, x, y). Labels that are not numeric, char or logical
% arrays need param.hashFn(param, y) (a bmrm extension).
%
% options, BCFWstruct's names and defaults: lambda (1/n), gap_threshold
% (0.1), gap_check (10; 0: only the final check), num_passes (200),
% do_line_search (1), do_weighted_averaging (1), time_budget (minutes, inf),
% rand_seed (1), sample ('uniform' or 'perm'), debug (0), debug_multiplier
% (0 only: one evaluation per pass), test_data (struct with patterns and
% labels). The algorithm is BCFWstruct's: FW steps, no cache.
%
% Outputs: model.w (the weighted average under do_weighted_averaging, else
% the last iterate) and model.ell (of that same point: its dual is
% model.ell - lambda/2*||model.w||^2); progress.primal, dual, eff_pass,
% train_error (and test_error with test_data): with debug their values after
% every pass, without debug empty (as BCFWstruct's).
who = 'solverBCFW';
if nargin < 1 || ~isstruct(param) || numel(param) ~= 1
  error('bmrm:badArgument', '%s: param must be a struct', who);
end
if nargin < 2 || isempty(options)
  options = struct();
end
check_options(who, options, {'lambda', 'gap_threshold', 'gap_check', 'num_passes', 'debug', ...
  'do_line_search', 'do_weighted_averaging', 'time_budget', 'rand_seed', 'sample', ...
  'debug_multiplier', 'test_data'});
if isfield(param, 'constraintFn') && ~isempty(param.constraintFn)
  param.oracleFn = param.constraintFn;   % svm-struct-learn's name
end
if ~isfield(param, 'oracleFn')
  error('bmrm:badArgument', '%s: param.oracleFn (or param.constraintFn) is missing', who);
end
opt = @(name, default) option(options, name, default);
o = bcfw_base_options(who, param, options, 2);
gc = opt('gap_check', 10);
if gc == 0
  gc = inf;   % BCFWstruct's "off": only the final certificate
end
o.gap_check = gc;
switch opt('sample', 'uniform')
  case 'uniform', o.sampling = 0;
  case 'perm', o.sampling = 1;
  otherwise, error('bmrm:badArgument', '%s: options.sample must be ''uniform'' or ''perm''', who);
end
o.step_type = 0;
o.use_cache = 0;
o.line_search = double(logical(opt('do_line_search', 1)));
o.weighted_averaging = double(logical(opt('do_weighted_averaging', 1)));
o.seed = opt('rand_seed', 1);
debug = logical(opt('debug', 0));
if opt('debug_multiplier', 0) ~= 0
  unsupported(who, 'options.debug_multiplier ~= 0 (logging within a pass)');
end
test_data = opt('test_data', []);
has_test = isstruct(test_data) && isfield(test_data, 'patterns');
if debug
  o.log_every = 1;
end

[m, p] = bcfw_call(who, param, o);
model = struct('w', m.w, 'ell', m.ell);
% BCFWstruct's progress always has these fields, empty without debug.
progress = struct('primal', [], 'dual', [], 'eff_pass', [], 'train_error', []);
if has_test
  progress.test_error = [];
end
if debug
  k = numel(p.model_pass);
  progress.primal = zeros(k, 1);
  progress.dual = p.model_dual;
  progress.eff_pass = p.eff_pass(p.model_pass);
  progress.train_error = zeros(k, 1);
  if has_test
    progress.test_error = zeros(k, 1);
  end
  for j = 1:k
    mj = struct('w', p.model_w(:, j), 'ell', p.model_ell(j));
    progress.primal(j) = primal_value(param, mj, o.lambda);
    progress.train_error(j) = mean_loss(param, mj);
    if has_test
      tp = param;
      tp.patterns = test_data.patterns;
      tp.labels = test_data.labels;
      progress.test_error(j) = mean_loss(tp, mj);
    end
  end
end
end

function f = primal_value(param, model, lambda)
% lambda/2 ||w||^2 + the mean structured hinge loss (one oracle pass).
h = 0;
n = numel(param.patterns);
for i = 1:n
  x = param.patterns{i};
  y = param.labels{i};
  ys = param.oracleFn(param, model, x, y);
  psi = param.featureFn(param, x, y) - param.featureFn(param, x, ys);
  h = h + param.lossFn(param, y, ys) - model.w' * psi(:);
end
f = 0.5 * lambda * (model.w' * model.w) + h / n;
end

function e = mean_loss(param, model)
% The mean loss of the plain predictions oracleFn(param, model, x).
e = 0;
for i = 1:numel(param.patterns)
  e = e + param.lossFn(param, param.labels{i}, param.oracleFn(param, model, param.patterns{i}));
end
e = e / numel(param.patterns);
end
