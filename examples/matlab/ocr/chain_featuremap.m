function phi = chain_featuremap(param, x, y)
%CHAIN_FEATUREMAP phi(x, y) of the chain model: emissions, transitions, start and end.
nf = param.nfeat; K = param.nlab; L = numel(y);
rows = [];
vals = [];
for t = 1:L
  rows = [rows; (y(t) - 1) * nf + (1:nf)'];           %#ok<AGROW>
  vals = [vals; x(:, t)];                              %#ok<AGROW>
end
o = nf * K;
for t = 1:L - 1
  rows = [rows; o + (y(t + 1) - 1) * K + y(t)];        %#ok<AGROW>
  vals = [vals; 1];                                    %#ok<AGROW>
end
o = o + K * K;
rows = [rows; o + y(1); o + K + y(L)];
vals = [vals; 1; 1];
phi = sparse(rows, 1, vals, nf * K + K * K + 2 * K, 1);
end
