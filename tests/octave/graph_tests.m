% Graph problems from Octave (bmrm_graph.m): the built-in exhaustive engine,
% a decoder written in MATLAB and bmrm.m over a risk written in MATLAB
% (graph_risk.m, enumeration) solve the same problem; bad graphs and a
% failing decoder give errors naming what is wrong. Run by tests/octave.rs.
global checks_passed checks_failed
checks_passed = 0; checks_failed = 0;
addpath(getenv('BMRM_MEX_DIR'));
here = fileparts(mfilename('fullpath'));
addpath(fullfile(fileparts(fileparts(here)), 'bindings', 'matlab'));

data = graph_data();
lambda = 0.05;
opts = struct('TolRel', 1e-9, 'TolAbs', 1e-12);
d = data; d.engine = 'exhaustive';
[Wa, sa, pa] = bmrm_graph(d, lambda, opts);
[Wb, sb, pb] = bmrm_graph(data, lambda, opts, @graph_enumerate);
check(numel(Wa) == 10, 'dim %d', numel(Wa));
check(isequal(Wa, Wb) && sa.Fp == sb.Fp && sa.Fd == sb.Fd, ...
      'decoder vs engine: Fp %.17g / %.17g', sa.Fp, sb.Fp);
check(isequal(pa, pb), 'the predictions agree');
% Engines by name, resolved by the library ('_' for '-'): cut-set
% conditioning and AD3 with branch and bound are exact, so they reach the
% same optimum; 'max_product' is an alias.
for name = {'conditioning', 'ad3_branch_and_bound', 'max_product'}
  c = data; c.engine = name{1};
  [Wc, sc] = bmrm_graph(c, lambda, opts);
  check(abs(sc.Fp - sa.Fp) <= 1e-7 * sa.Fp, '%s: Fp %.17g vs %.17g', name{1}, sc.Fp, sa.Fp);
end
% The same problem through bmrm.m and a MATLAB max-oracle.
[Wr, sr] = bmrm(data, @graph_risk, lambda, struct('TolRel', 1e-9, 'TolAbs', 1e-12));
check(abs(sa.Fp - sr.Fp) <= 1e-7 * sr.Fp, 'graph %.12g vs MATLAB risk %.12g', sa.Fp, sr.Fp);
check(sa.Fd <= sr.Fp + 1e-12 && sr.Fd <= sa.Fp + 1e-12, 'bounds below each other''s primal');
check(abs(0.5 * lambda * (Wa' * Wa) + graph_risk(data, Wa) - sa.Fp) <= 1e-9 * sa.Fp, ...
      'stat.Fp is F(W) by enumeration');
check(norm(Wa - Wr) <= 1e-3 * norm(Wr), '||W - W_risk|| = %g', norm(Wa - Wr));
% Predictions: the argmax of <W, phi> by enumeration (1-based).
D = 2;
for i = 1:6
  nodes = data.node_start(i) + 1:data.node_start(i + 1);
  n = numel(nodes);
  best = -inf;
  for k = 0:2^n - 1
    y = 1 + mod(floor(k ./ 2.^(0:n-1)), 2)';
    e = data.edges(data.edge_start(i) + 1:data.edge_start(i + 1), :);
    s = 0;
    for j = 1:n, s = s + Wa((y(j) - 1) * 3 + (1:3))' * [data.node_features(nodes(j), :)'; 1]; end
    for r = 1:size(e, 1), s = s + Wa(6 + (y(e(r, 1)) - 1) * 2 + y(e(r, 2))); end
    if s > best, best = s; yb = y; end
  end
  check(isequal(pa{i}, yb), 'example %d: prediction', i);
end
% BCFW trains the same model.
[Wc, sc] = bmrm_graph(d, lambda, struct('Algorithm', 'bcfw', 'TolRel', 1e-4));
check(sc.Fd <= sa.Fp + 1e-12 && abs(sc.Fp - sa.Fp) <= 1e-3 * sa.Fp, 'bcfw Fp %g vs %g', sc.Fp, sa.Fp);

% Bad graphs: the library's message names the example and the edge or node.
b = data; b.edges(data.edge_start(2) + 1, 1) = 9;
expect_error(@() bmrm_graph(b, lambda), 'bmrm:badArgument', 'example 1: edge 0 (8, 1) joins node 8');
b = data; b.states(data.node_start(4) + 2) = 3;
expect_error(@() bmrm_graph(b, lambda), 'bmrm:badArgument', 'example 3');
b = data; b.labels(3) = 3;
expect_error(@() bmrm_graph(b, lambda), 'bmrm:badArgument', 'data.labels(3) = 3 is not in 1..2');
b = data; b.edges(1, 2) = 0;
expect_error(@() bmrm_graph(b, lambda), 'bmrm:badArgument', 'data.edges(1, 2) = 0 is not a node (1-based)');
b = data; b.colour = 1;
expect_error(@() bmrm_graph(b, lambda), 'bmrm:badArgument', 'unknown data field ''colour''');
b = data; b.engine = 'magic';
expect_error(@() bmrm_graph(b, lambda), 'bmrm:badArgument', 'data.engine ''magic''');
expect_error(@() bmrm_graph(d, lambda, [], @graph_enumerate), 'bmrm:badArgument', 'a decoder is given');
% A decoder that fails, or answers out of range: errors, the session goes on.
expect_error(@() bmrm_graph(data, lambda, [], @(p) error('test:mine', 'no labels today')), ...
             'bmrm:callbackError', 'no labels today');
expect_error(@() bmrm_graph(data, lambda, [], @(p) 3 * ones(numel(p.states), 1)), ...
             'bmrm:badOutput', 'node 1: label 3 is not in 1..2');
[W2, s2] = bmrm_graph(d, lambda, opts);
check(isequal(W2, Wa), 'a solve after the errors');
% Positivity: none for constant edges; for Potts edges (2 features) the two
% Potts weights after the 2 x 3 unary block, 1-based, and .Positivity keeps
% them >= 0 (a bound below the free problem's optimum).
check(isempty(sa.positivity), 'constant edges: no positivity coordinates');
p = data; p.edge_kind = 'potts';
p.edge_features = [ones(size(p.edges, 1), 1), mod((1:size(p.edges, 1))', 3) / 4];
[Wf, sf] = bmrm_graph(p, lambda, opts);
[Wp, sp] = bmrm_graph(p, lambda, struct('TolRel', 1e-9, 'TolAbs', 1e-12, 'Positivity', true));
check(isequal(sf.positivity, [7; 8]) && isequal(sp.positivity, [7; 8]), 'Potts: positivity %s', mat2str(sp.positivity'));
check(all(Wp(sp.positivity) >= 0), 'Positivity keeps W(7:8) = %s >= 0', mat2str(Wp(7:8)'));
check(sp.Fp >= sf.Fd - 1e-12 && sf.Fp >= sf.Fd, 'the constrained optimum %.12g is not below the free bound %.12g', sp.Fp, sf.Fd);
printf('graph: Fp %.12g (engine = decoder, bit-identical), MATLAB risk %.12g\n', sa.Fp, sr.Fp);
printf('%d passed, %d failed\n', checks_passed, checks_failed);
if checks_failed > 0
  exit(1);
end
