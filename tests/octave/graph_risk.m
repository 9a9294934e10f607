function [R, subgrad] = graph_risk(data, W)
%GRAPH_RISK The graph model's risk written out in MATLAB (an independent
% max-oracle by enumeration): mean_i max_y [loss + <W, phi(y) - phi(y_i)>],
% phi = the unary rows [x 1] of each node's state, then a 2 x 2 table of
% edge counts (row-major: index a*2 + b).
D = size(data.node_features, 2);
S = 2;
dim = S * (D + 1) + S * S;
if nargin < 2, W = zeros(dim, 1); end
m = numel(data.node_start) - 1;
R = 0;
subgrad = zeros(dim, 1);
for i = 1:m
  nodes = data.node_start(i) + 1:data.node_start(i + 1);
  edges = data.edges(data.edge_start(i) + 1:data.edge_start(i + 1), :);
  n = numel(nodes);
  truth = data.labels(nodes);
  phi_t = phi(data.node_features(nodes, :), edges, truth, D, S, dim);
  best = -inf;
  for k = 0:S^n - 1
    y = 1 + mod(floor(k ./ S.^(0:n-1)), S)';
    ph = phi(data.node_features(nodes, :), edges, y, D, S, dim);
    v = sum(y ~= truth) / n + W' * (ph - phi_t);
    if v > best, best = v; g = ph - phi_t; end
  end
  R = R + best / m;
  subgrad = subgrad + g / m;
end
end

function ph = phi(x, edges, y, D, S, dim)
ph = zeros(dim, 1);
for j = 1:numel(y)
  at = (y(j) - 1) * (D + 1);
  ph(at + (1:D)) = ph(at + (1:D)) + x(j, :)';
  ph(at + D + 1) = ph(at + D + 1) + 1;
end
for e = 1:size(edges, 1)
  k = S * (D + 1) + (y(edges(e, 1)) - 1) * S + y(edges(e, 2));
  ph(k) = ph(k) + 1;
end
end
