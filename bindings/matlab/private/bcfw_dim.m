function d = bcfw_dim(who, param)
%BCFW_DIM The feature dimension: featureFn at the first example.
for f = {'patterns', 'labels', 'lossFn', 'featureFn'}
  if ~isfield(param, f{1})
    error('bmrm:badArgument', '%s: param.%s is missing', who, f{1});
  end
end
if ~iscell(param.patterns) || isempty(param.patterns)
  error('bmrm:badArgument', '%s: param.patterns must be a non-empty cell array', who);
end
phi = param.featureFn(param, param.patterns{1}, param.labels{1});
if ~isnumeric(phi) || isempty(phi) || ~isvector(phi)
  error('bmrm:badOutput', '%s: param.featureFn(param, x, y) must return a vector', who);
end
d = numel(phi);
if isfield(param, 'd') && ~isempty(param.d) && param.d ~= d
  error('bmrm:badArgument', '%s: param.d = %g but featureFn gives %d features', who, param.d, d);
end
if isfield(param, 'n') && ~isempty(param.n) && param.n ~= numel(param.patterns)
  error('bmrm:badArgument', '%s: param.n = %g but there are %d patterns', who, param.n, numel(param.patterns));
end
end
