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
addpath(fullfile(here, 'ocr'));

[words, labels, nlab, source] = ocr_load_words(root);
fprintf('%s\n', source);
train = 1:min(num_train, numel(words.train));
param = struct();
param.patterns = words.train(train);
param.labels = labels.train(train);
param.nlab = nlab;
param.nfeat = size(words.train{1}, 1);
param.lossFn = @chain_loss;
param.oracleFn = @chain_oracle;
param.featureFn = @chain_featuremap;
d = nlab * param.nfeat + nlab * nlab + 2 * nlab;
fprintf('%d training words, %d labels, d = %d\n', numel(param.patterns), nlab, d);

options = struct('lambda', 0.01, 'num_passes', num_passes, 'gap_threshold', 1e-3, ...
                 'sample', 'gap', 'stepType', 2, 'useCache', 1, 'verb', 5);
tic;
[model, progress] = bcfw(param, options);
fprintf('BCFW: %d passes (%.1f effective), primal %.6f, duality gap %.3g, %s, %.1f s\n', ...
        numel(progress.primal), progress.eff_pass(end), progress.primal(end), progress.gap(end), ...
        progress.exit, toc);
fprintf('train letter error %.4f\n', chain_letter_error(param, model.w, words.train(train), labels.train(train)));
fprintf('test letter error %.4f\n', chain_letter_error(param, model.w, words.test, labels.test));
end
