function [X, y] = mc_data(m, d, K, seed)
%MC_DATA m examples (columns of X, d features, the last a constant 1) of K
% classes, from a seeded LCG: class k has +1.5 on feature mod(k-1, d-1)+1.
state = seed;
X = zeros(d, m);
y = zeros(1, m);
for i = 1:m
  y(i) = mod(i - 1, K) + 1;
  for j = 1:d-1
    state = mod(state * 1103515245 + 12345, 2^31);
    v = 2 * state / 2^31 - 1;
    if j == mod(y(i) - 1, d - 1) + 1, v = v + 1.5; end
    X(j, i) = v;
  end
  X(d, i) = 1;
end
end
