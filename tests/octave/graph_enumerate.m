function y = graph_enumerate(p)
%GRAPH_ENUMERATE A decoder: every labelling of the potentials, node 1
% fastest, the first best kept (the built-in exhaustive engine's order).
n = numel(p.states);
y = ones(n, 1);
best = -inf;
cur = ones(n, 1);
while true
  s = 0;
  for i = 1:n, s = s + p.unary{i}(cur(i)); end
  for e = 1:size(p.edges, 1)
    s = s + p.pairwise{e}(cur(p.edges(e, 1)), cur(p.edges(e, 2)));
  end
  if s > best, best = s; y = cur; end
  i = 1;
  while i <= n
    cur(i) = cur(i) + 1;
    if cur(i) <= p.states(i), break; end
    cur(i) = 1;
    i = i + 1;
  end
  if i > n, break; end
end
end
