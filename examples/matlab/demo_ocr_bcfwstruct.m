% A chain structured SVM on the OCR words, as BCFWstruct's demo/chain/ocr.m
% does it: solverBCFW with its defaults (uniform sampling, FW steps,
% weighted averaging), debug logging with the test data. The one line that
% differs from a BCFWstruct script is the addpath of bmrm's bindings/matlab.
here = fileparts(mfilename('fullpath'));
root = fileparts(fileparts(here));
addpath(fullfile(root, 'bindings', 'matlab'));
addpath(fullfile(here, 'ocr'));

[words, labels, nlab, data_source] = ocr_load_words(root);
fprintf('%s\n', data_source);
num_train = min(20, numel(words.train));
patterns_train = words.train(1:num_train);
labels_train = labels.train(1:num_train);

param = [];
param.patterns = patterns_train;
param.labels = labels_train;
param.nlab = nlab;
param.nfeat = size(patterns_train{1}, 1);
param.lossFn = @chain_loss;
param.oracleFn = @chain_oracle;
param.featureFn = @chain_featuremap;

options = [];
options.lambda = 0.01;
options.gap_threshold = 0.1;
options.num_passes = 10;
options.do_line_search = 1;
options.debug = 1;
options.test_data.patterns = words.test(1:50);
options.test_data.labels = labels.test(1:50);

[model, progress] = solverBCFW(param, options);
fprintf('primal %f, dual %f after %d passes\n', progress.primal(end), progress.dual(end), numel(progress.primal));
fprintf('train error %f, test error %f\n', progress.train_error(end), progress.test_error(end));
