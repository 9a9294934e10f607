function [words, labels, nlab, source] = ocr_load_words(root)
%OCR_LOAD_WORDS The OCR words (Taskar et al.) from ../shared/data/ocr_letters.tsv.gz
% relative to the project root: fold 0 for training (OCR-small), a test sample
% of folds 1..9; generated chains when the file is absent.
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
  [words, labels, nlab] = ocr_synthetic_words();
  source = sprintf(['%s not found: a synthetic chain data set instead ' ...
                    '(4 labels, 8 noisy features, Markov label sequences)'], file);
end
end
