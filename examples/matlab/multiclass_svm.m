function [W, stat] = multiclass_svm()
%MULTICLASS_SVM A multiclass SVM (Crammer-Singer, 0/1 loss) trained with bmrm
% in the calling convention of the MATLAB BMRM toolbox, then the same
% problem with bcfw in the BCFW code's convention. The data are generated
% here: K Gaussian blobs. Run it from anywhere after build_mex.
here = fileparts(mfilename('fullpath'));
addpath(fullfile(fileparts(fileparts(here)), 'bindings', 'matlab'));

K = 4; d = 10; m = 2000;
[Xtr, ytr] = blobs(m, d, K, 1);
[Xte, yte] = blobs(1000, d, K, 2);

% The toolbox's way: a risk function over all the data (summed hinge),
% lambda multiplying 0.5*||W||^2.
data = struct('X', [Xtr; ones(1, m)], 'y', ytr, 'K', K);
lambda = 1;                                  % summed risk: lambda_mean = lambda / m
options = struct('TolRel', 1e-3, 'Algorithm', 'proxbmrm', 'verb', 50);
[W, stat] = bmrm(data, @risk, lambda, options);
fprintf('bmrm (Prox-BMRM): %d iterations, Fp = %.6f, Fd = %.6f, exitflag %d\n', ...
        stat.nIter, stat.Fp, stat.Fd, stat.exitflag);
fprintf('train error %.4f, test error %.4f\n', error_rate(W, data.X, ytr, K), ...
        error_rate(W, [Xte; ones(1, size(Xte, 2))], yte, K));

% P-BMRM with the data in 8 blocks (one cutting-plane model per block).
blocks = cell(1, 8);
for p = 1:8
  idx = p:8:m;
  blocks{p} = struct('X', data.X(:, idx), 'y', ytr(idx), 'K', K);
end
[Wp, sp] = bmrm(blocks, @risk, lambda, struct('Algorithm', 'proxpbmrm'));
fprintf('bmrm (Prox-P-BMRM, 8 blocks): %d iterations, Fp = %.6f\n', sp.nIter, sp.Fp);

% The BCFW code's way: per-example oracles and the mean risk (lambda / m).
% Every oracle call is a call of MATLAB functions: on 400 examples here.
n = 400;
param = struct('K', K);
param.patterns = num2cell(data.X(:, 1:n), 1);
param.labels = num2cell(ytr(1:n));
param.lossFn = @(param, y, yhat) double(y ~= yhat);
param.featureFn = @feature;
param.oracleFn = @oracle;
[model, progress] = bcfw(param, struct('lambda', lambda / n, 'gap_threshold', 1e-3, 'num_passes', 50));
fprintf('bcfw (%d examples): %d passes (%.1f effective), primal %.6f, gap %.3g, %s\n', n, ...
        numel(progress.gap), progress.eff_pass(end), progress.primal(end), progress.gap(end), progress.exit);
fprintf('test error %.4f\n', error_rate(model.w, [Xte; ones(1, size(Xte, 2))], yte, K));
end

function [R, g, data] = risk(data, W)
% R = sum_i max_y [y ~= y_i] + <w_y - w_{y_i}, x_i> and a subgradient.
[dp, m] = size(data.X);
K = data.K;
if nargin < 2, W = zeros(dp * K, 1); end
S = reshape(W, dp, K)' * data.X;
truth = sub2ind(size(S), data.y, 1:m);
A = S + 1;
A(truth) = S(truth);
[best, yhat] = max(A, [], 1);
R = sum(best - S(truth));
G = zeros(dp, K);
for k = 1:K
  G(:, k) = sum(data.X(:, yhat == k & yhat ~= data.y), 2) - sum(data.X(:, data.y == k & yhat ~= data.y), 2);
end
g = G(:);
end

function phi = feature(param, x, y)
d = numel(x);
phi = sparse((y - 1) * d + (1:d)', 1, x, d * param.K, 1);
end

function yhat = oracle(param, model, x, y)
d = numel(x);
s = reshape(model.w, d, param.K)' * x + 1;
s(y) = s(y) - 1;
[~, yhat] = max(s);
if s(y) >= s(yhat), yhat = y; end
end

function [X, y] = blobs(m, d, K, seed)
% Class k has its mean at 2 on coordinates k and k + K; uniform noise.
state = seed;
X = zeros(d, m);
y = zeros(1, m);
for i = 1:m
  state = mod(state * 1103515245 + 12345, 2^31);
  y(i) = floor(state / 2^31 * K) + 1;
  for j = 1:d
    state = mod(state * 1103515245 + 12345, 2^31);
    X(j, i) = 2 * ((j == y(i)) || (j == y(i) + K)) + 3.4 * (state / 2^31 - 0.5);
  end
end
end

function e = error_rate(W, X, y, K)
[~, yhat] = max(reshape(W, size(X, 1), K)' * X, [], 1);
e = mean(yhat ~= y);
end
