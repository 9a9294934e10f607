function data = graph_data()
%GRAPH_DATA Six chains of 2..4 binary nodes, 2 features each, constant edges
% (the graph tests' problem; indices 1-based, as bmrm_graph takes them).
rand('seed', 27);
data = struct('node_start', 0, 'edge_start', 0, 'states', [], 'labels', [], ...
              'node_features', zeros(0, 2), 'edges', zeros(0, 2));
for i = 1:6
  len = 2 + mod(i - 1, 3);
  y = 1 + (rand(len, 1) < 0.5);
  x = double(single((2 * y - 3) * 0.5 + rand(len, 2) - 0.5)); % the library keeps features as float
  data.states = [data.states; 2 * ones(len, 1)];
  data.labels = [data.labels; y];
  data.node_features = [data.node_features; x];
  data.edges = [data.edges; [(1:len-1)', (2:len)']];
  data.node_start(end + 1) = data.node_start(end) + len;
  data.edge_start(end + 1) = data.edge_start(end) + len - 1;
end
data.loss = 'normalised-hamming';
end
