% A chain structured SVM on the OCR words, as gapBCFW's demo_ocr.m does it:
% param with n, d, a one-argument hashFn; solver_BCFW_hybrid; the losses on
% the training and test words. The one line that differs from a gapBCFW
% script is the addpath of bmrm's bindings/matlab (instead of setup_BCFW).
here = fileparts(mfilename('fullpath'));
root = fileparts(fileparts(here));
addpath(fullfile(root, 'bindings', 'matlab'));
addpath(fullfile(here, 'ocr'));

%% load the dataset (the first words of fold 0: OCR-small's training set)
[words, labels, nlab, data_source] = ocr_load_words(root);
fprintf('%s\n', data_source);
num_train = min(20, numel(words.train));
patterns_train = words.train(1:num_train);
labels_train = labels.train(1:num_train);
patterns_test = words.test;
labels_test = labels.test;

%% setup the solver
param = [];
param.patterns = patterns_train;
param.labels = labels_train;
param.nlab = nlab;
param.nfeat = size(patterns_train{1}, 1);
param.lossFn = @chain_loss;
param.oracleFn = @chain_oracle;
param.featureFn = @chain_featuremap;
param.hashFn = @hash_ocr_sequence;
param.n = length(param.patterns);
phi1 = param.featureFn(param, param.patterns{1}, param.labels{1});
param.d = length(phi1);
param.using_sparse_features = issparse(phi1);
clear phi1;

options = struct;
options.lambda = 0.01;
options.gap_threshold = 0.1;
options.num_passes = 30;

%% run the solver
[model, ~, ~, progress] = solver_BCFW_hybrid(param, options);

%% loss on the train and test sets
avg_loss = 0;
for i = 1:numel(patterns_train)
  ypredict = param.oracleFn(param, model, patterns_train{i});
  avg_loss = avg_loss + param.lossFn(param, labels_train{i}, ypredict);
end
fprintf('average loss on the training set: %f.\n', avg_loss / numel(patterns_train));
avg_loss = 0;
for i = 1:numel(patterns_test)
  ypredict = param.oracleFn(param, model, patterns_test{i});
  avg_loss = avg_loss + param.lossFn(param, labels_test{i}, ypredict);
end
fprintf('average loss on the test set: %f.\n', avg_loss / numel(patterns_test));
fprintf('verified gaps: %s\n', mat2str(progress.verifiedGap', 4));
