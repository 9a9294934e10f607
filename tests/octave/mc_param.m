function param = mc_param(X, y, K)
%MC_PARAM The multiclass problem in the BCFW code's convention.
param = struct();
param.patterns = num2cell(X, 1);
param.labels = num2cell(y);
param.K = K;
param.lossFn = @(param, ytruth, ypred) double(ytruth ~= ypred);
param.featureFn = @mc_feature;
param.oracleFn = @mc_oracle;
end

function phi = mc_feature(param, x, y)
d = numel(x);
phi = sparse((y - 1) * d + (1:d)', 1, x, d * param.K, 1);
end

function yhat = mc_oracle(param, model, x, y)
d = numel(x);
if nargin < 4   % plain prediction (the BCFW codes' evaluation)
  [~, yhat] = max(reshape(model.w, d, param.K)' * x);
  return;
end
scores = reshape(model.w, d, param.K)' * x + 1;
scores(y) = scores(y) - 1;
[~, yhat] = max(scores);
if scores(y) >= scores(yhat), yhat = y; end   % the truth wins ties
end
