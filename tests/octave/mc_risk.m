function [R, g, data] = mc_risk(data, W)
%MC_RISK The multiclass SVM risk (Crammer-Singer, 0/1 loss) summed over the
% examples, in the toolbox convention: R = sum_i max_y [y ~= y_i] + <w_y - w_{y_i}, x_i>.
[d, m] = size(data.X);
K = data.K;
if nargin < 2, W = zeros(d * K, 1); end
S = reshape(W, d, K)' * data.X;                   % K x m scores
idx = sub2ind(size(S), data.y, 1:m);
A = S + 1;
A(idx) = S(idx);                                  % loss-augmented scores
[best, yhat] = max(A, [], 1);
R = sum(best - S(idx));
wrong = yhat ~= data.y;
G = zeros(d, K);
for k = 1:K
  G(:, k) = data.X(:, wrong & yhat == k) * ones(sum(wrong & yhat == k), 1) ...
          - data.X(:, wrong & data.y == k) * ones(sum(wrong & data.y == k), 1);
end
g = G(:);
end
