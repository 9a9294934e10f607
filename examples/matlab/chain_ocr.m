function [model, progress] = chain_ocr(num_train, num_passes)
%CHAIN_OCR A chain model (a linear-chain structured SVM) on the OCR words of
% Taskar et al., trained with bcfw in the calling convention of the BCFW
% MATLAB code. Run it from anywhere after build_mex:
%
%   chain_ocr            % 200 training words of fold 0, at most 30 passes
%   chain_ocr(626, 50)   % OCR-small: all of fold 0
%
% The data are read from ../shared/data/ocr_letters.tsv.gz (relative to the
% project root); when that file is absent, a synthetic chain data set is
% generated instead (and the example says so).
%
% The model (the BCFW papers' standard): emission features (the pixels and
% a constant 1, per label), transitions, and per-label start and end biases;
% loss: Hamming distance divided by the word length; oracle: Viterbi with
% 1/L added to every wrong label.
if nargin < 1, num_train = 200; end
if nargin < 2, num_passes = 30; end
here = fileparts(mfilename('fullpath'));
root = fileparts(fileparts(here));
addpath(fullfile(root, 'bindings', 'matlab'));

[words, labels, nlab, source] = load_words(root);
fprintf('%s\n', source);
train = 1:min(num_train, numel(words.train));
param = struct();
param.patterns = words.train(train);
param.labels = labels.train(train);
param.nlab = nlab;
param.nfeat = size(words.train{1}, 1);
param.lossFn = @chain_loss;
param.oracleFn = @chain_oracle;
param.featureFn = @chain_features;
d = nlab * param.nfeat + nlab * nlab + 2 * nlab;
fprintf('%d training words, %d labels, d = %d\n', numel(param.patterns), nlab, d);

options = struct('lambda', 0.01, 'num_passes', num_passes, 'gap_threshold', 1e-3, ...
                 'sample', 'gap', 'stepType', 2, 'useCache', 1, 'verb', 5);
tic;
[model, progress] = bcfw(param, options);
fprintf('BCFW: %d passes (%.1f effective), primal %.6f, duality gap %.3g, %s, %.1f s\n', ...
        numel(progress.primal), progress.eff_pass(end), progress.primal(end), progress.gap(end), ...
        progress.exit, toc);
fprintf('train letter error %.4f\n', letter_error(param, model.w, words.train(train), labels.train(train)));
fprintf('test letter error %.4f\n', letter_error(param, model.w, words.test, labels.test));
end

% ---------------------------------------------------------------------------
% Data.

function [words, labels, nlab, source] = load_words(root)
file = fullfile(fileparts(root), 'shared', 'data', 'ocr_letters.tsv.gz');
if exist(file, 'file')
  tmp = tempname();
  mkdir(tmp);
  f = gunzip(file, tmp);
  fid = fopen(f{1});
  C = textscan(fid, ['%f %s %f %f %f %f' repmat(' %f', 1, 128)], 'Delimiter', '\t');
  fclose(fid);
  delete(f{1});
  rmdir(tmp);
  letter = double(char(C{2})) - double('a') + 1;     % 1..26
  word = C{4};
  fold = C{6};
  pixels = [C{7:134}]';                              % 128 x letters
  [~, first] = unique(word, 'first');
  [~, last] = unique(word, 'last');
  words = struct('train', {{}}, 'test', {{}});
  labels = struct('train', {{}}, 'test', {{}});
  for k = 1:numel(first)
    idx = first(k):last(k);
    x = [pixels(:, idx); ones(1, numel(idx))];
    if fold(first(k)) == 0                            % OCR-small: train on fold 0
      words.train{end + 1} = x;
      labels.train{end + 1} = letter(idx);
    elseif numel(words.test) < 500                    % a test sample of folds 1..9
      words.test{end + 1} = x;
      labels.test{end + 1} = letter(idx);
    end
  end
  nlab = 26;
  source = sprintf('OCR words from %s', file);
else
  [words, labels, nlab] = synthetic_words();
  source = sprintf(['%s not found: a synthetic chain data set instead ' ...
                    '(4 labels, 8 noisy features, Markov label sequences)'], file);
end
end

function [words, labels, nlab] = synthetic_words()
nlab = 4; nfeat = 8;
state = 12345;
means = 2 * eye(nlab, nfeat);
words = struct('train', {{}}, 'test', {{}});
labels = struct('train', {{}}, 'test', {{}});
for k = 1:800
  [state, L] = lcg_int(state, 4);
  L = L + 3;
  y = zeros(1, L);
  x = zeros(nfeat + 1, L);
  [state, y(1)] = lcg_int(state, nlab);
  for t = 1:L
    if t > 1
      [state, r] = lcg_int(state, 10);
      y(t) = y(t - 1);
      if r > 7, y(t) = mod(y(t - 1), nlab) + 1; end  % mostly stay, sometimes step
    end
    for j = 1:nfeat
      [state, u] = lcg_unit(state);
      x(j, t) = means(y(t), j) + 2 * (u - 0.5) * 2;
    end
    x(nfeat + 1, t) = 1;
  end
  if k <= 600
    words.train{end + 1} = x; labels.train{end + 1} = y';
  else
    words.test{end + 1} = x; labels.test{end + 1} = y';
  end
end
end

function [state, u] = lcg_unit(state)
state = mod(state * 1103515245 + 12345, 2^31);
u = state / 2^31;
end

function [state, k] = lcg_int(state, n)
[state, u] = lcg_unit(state);
k = floor(u * n) + 1;
end

% ---------------------------------------------------------------------------
% The chain model: w = [emission (nfeat x nlab); transitions (nlab x nlab);
% start (nlab); end (nlab)].

function [E, T, s, e] = unpack(param, w)
nf = param.nfeat; K = param.nlab;
E = reshape(w(1:nf * K), nf, K);
o = nf * K;
T = reshape(w(o + 1:o + K * K), K, K);
o = o + K * K;
s = w(o + 1:o + K);
e = w(o + K + 1:o + 2 * K);
end

function phi = chain_features(param, x, y)
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

function l = chain_loss(param, ytruth, ypred)
l = sum(ytruth(:) ~= ypred(:)) / numel(ytruth);
end

function y = chain_oracle(param, model, x, ytruth)
% Viterbi on the scores plus 1/L on every wrong label (loss-augmented).
[E, T, s, e] = unpack(param, model.w);
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

function err = letter_error(param, w, xs, ys)
wrong = 0; total = 0;
model = struct('w', w);
for i = 1:numel(xs)
  y = chain_oracle(param, model, xs{i}, []);
  wrong = wrong + sum(y ~= ys{i});
  total = total + numel(y);
end
err = wrong / total;
end
