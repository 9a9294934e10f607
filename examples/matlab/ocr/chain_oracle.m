function y = chain_oracle(param, model, x, ytruth)
%CHAIN_ORACLE Viterbi decoding; with the truth, loss-augmented (1/L on every wrong label).
[E, T, s, e] = chain_unpack(param, model.w);
L = size(x, 2); K = param.nlab;
U = E' * x;                                            % K x L
if nargin > 3 && ~isempty(ytruth)
  U = U + 1 / L;
  U(sub2ind([K, L], ytruth(:)', 1:L)) = U(sub2ind([K, L], ytruth(:)', 1:L)) - 1 / L;
end
U(:, 1) = U(:, 1) + s;
U(:, L) = U(:, L) + e;
score = U(:, 1);
back = zeros(K, L);
for t = 2:L
  [best, arg] = max(bsxfun(@plus, score, T), [], 1);  % T(prev, next)
  score = best' + U(:, t);
  back(:, t) = arg';
end
y = zeros(L, 1);
[~, y(L)] = max(score);
for t = L:-1:2
  y(t - 1) = back(y(t), t);
end
end
