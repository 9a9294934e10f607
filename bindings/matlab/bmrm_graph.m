function [W, stat, pred] = bmrm_graph(data, lambda, options, decoder)
%BMRM_GRAPH Trains a factor-graph model (a structured SVM over graphs).
%
% Synopsis:
%   [W, stat, pred] = bmrm_graph(data, lambda)
%   [W, stat, pred] = bmrm_graph(data, lambda, options)
%   [W, stat, pred] = bmrm_graph(data, lambda, options, decoder)
%
% Minimizes F(W) = 0.5*lambda*W'*W + mean_i max_y [loss(y_i, y) + <W, phi(x_i, y) - phi(x_i, y_i)>]
% over the library's graph model (docs/c-api.md, docs/matlab.md). The
% library computes the potentials, the loss augmentation and the joint
% features; an engine (data.engine) or the decoder maximises over labellings.
%
% data (a struct; m examples, n nodes and E edges in all, example after
% example). Indices are 1-BASED (MATLAB's convention): labels, edges, and
% the decoder's answers.
%   .node_start     m+1 offsets from 0: example i's nodes are node_start(i)+1 .. node_start(i+1)
%   .edge_start     m+1 offsets from 0, the same for the edges
%   .states         n state counts (one node type: all equal)
%   .labels         n true states, in 1..states
%   .node_features  n x D features (a node in state s scores <W_s, [x; 1]>)
%   .edges          E x 2 node indices, 1-based WITHIN the example
%   .edge_features  E x F (for 'dense' and 'potts' edges)
%   .edge_kind      'constant' (default), 'dense', 'potts' or 'displacement'
%   .grids          n x 4 [origin_x origin_y width height] ('displacement')
%   .loss           'hamming' (default) or 'normalised-hamming'
%   .bias           append a constant 1 to the node features (default true)
%   .engine         'auto' (default), 'exhaustive', 'tree_max_sum',
%                   'distance_transform', 'graph_cut', 'alpha_expansion',
%                   'loopy_max_product', 'exact_or_loopy', 'ad3',
%                   'ad3_branch_and_bound', 'conditioning', 'unary', 'qpbo'
%                   (the library's engine names, '_' for '-'; an alias
%                   such as 'max_product' or 'lp' too)
%
% options: .Algorithm ('bmrm' default, 'proxbmrm', 'pbmrm', 'proxpbmrm',
%   'bcfw'), .TolRel (1e-3), .TolAbs (0), .MaxIter (inf), .NumThreads (0),
%   .verb (0), .Positivity (false: true keeps W(stat.positivity) >= 0
%   during training, as box constraints).
%
% decoder: a function handle labels = decoder(potentials), which replaces
%   the engine (leave data.engine 'auto'): potentials.example (1-based),
%   .states (n x 1), .edges (E x 2, 1-based), .unary{i}(s) and
%   .pairwise{e}(a, b) (loss augmentation included); return the n labels
%   (1-based) maximising sum_i unary{i}(y_i) + sum_e pairwise{e}(y_u, y_v).
%   It is taken to be exact.
%
% Outputs: W (the weights: the states x (D+bias) unary block, row s for
%   state s, then the pairwise block); stat.Fp = F(W), stat.Fd a lower bound
%   of min F, .nIter, .exitflag, .exit, .positivity (the 1-based indices of
%   the weights whose non-negativity keeps the exact engines exact: the
%   Potts weights, the quadratic displacement weights; empty for other
%   edges); pred{i} example i's labelling (1-based) maximising <W, phi> (no
%   loss).
%
% Errors: a bad graph is 'bmrm:invalidArgument' (or another bmrm: status)
% with the library's message naming the example and the node or edge
% (counted from 0 there); an error in the decoder is 'bmrm:callbackError'.

if nargin < 2
  error('bmrm:badArgument', 'bmrm_graph: usage [W, stat, pred] = bmrm_graph(data, lambda, options, decoder)');
end
if nargin < 3 || isempty(options)
  options = struct();
end
if nargin < 4
  decoder = [];
end
if ~isstruct(data) || numel(data) ~= 1
  error('bmrm:badArgument', 'bmrm_graph: data must be a struct');
end
if ~isstruct(options) || numel(options) ~= 1
  error('bmrm:badArgument', 'bmrm_graph: options must be a struct');
end
if ~isempty(decoder) && ~isa(decoder, 'function_handle')
  error('bmrm:badArgument', 'bmrm_graph: decoder must be a function handle, not a %s', class(decoder));
end
if ~isnumeric(lambda) || ~isscalar(lambda) || ~isreal(lambda) || ~(lambda > 0) || ~isfinite(lambda)
  error('bmrm:badArgument', 'bmrm_graph: lambda must be a positive finite scalar');
end
known = {'node_start', 'edge_start', 'states', 'labels', 'node_features', 'edges', ...
         'edge_features', 'edge_kind', 'grids', 'loss', 'bias', 'engine'};
names = fieldnames(data);
for k = 1:numel(names)
  if ~any(strcmp(names{k}, known))
    error('bmrm:badArgument', 'bmrm_graph: unknown data field ''%s'' (known: %s)', names{k}, strjoin(known, ', '));
  end
end
known = {'Algorithm', 'TolRel', 'TolAbs', 'MaxIter', 'NumThreads', 'verb', 'Positivity'};
names = fieldnames(options);
for k = 1:numel(names)
  if ~any(strcmp(names{k}, known))
    error('bmrm:badArgument', 'bmrm_graph: unknown option ''%s'' (known: %s)', names{k}, strjoin(known, ', '));
  end
end
for f = {'node_start', 'edge_start', 'states', 'labels', 'node_features', 'edges', 'edge_features', 'grids', 'bias'}
  if isfield(data, f{1}) && ~isempty(data.(f{1}))
    data.(f{1}) = full(double(data.(f{1})));
  end
end
opt = @(name, default) option(options, name, default);
o = struct();
o.algorithm = lower(opt('Algorithm', 'bmrm'));
o.tol_rel = opt('TolRel', 1e-3);
o.tol_abs = opt('TolAbs', 0);
o.max_iterations = opt('MaxIter', inf);
o.num_threads = opt('NumThreads', 0);
o.verb = opt('verb', 0);
o.positivity = double(logical(opt('Positivity', false)));
try
  [W, stat, pred] = bmrm_mex('graph', data, double(lambda), o, decoder);
catch err
  rethrow_mex(err);
end
end
