function [words, labels, nlab] = ocr_synthetic_words()
%OCR_SYNTHETIC_WORDS Generated chains (4 labels, 8 noisy features, Markov label
% sequences) with a fixed linear congruential generator.
nlab = 4; nfeat = 8;
state = 12345;
means = 2 * eye(nlab, nfeat);
words = struct('train', {{}}, 'test', {{}});
labels = struct('train', {{}}, 'test', {{}});
for k = 1:800
  [state, L] = ocr_lcg_int(state, 4);
  L = L + 3;
  y = zeros(1, L);
  x = zeros(nfeat + 1, L);
  [state, y(1)] = ocr_lcg_int(state, nlab);
  for t = 1:L
    if t > 1
      [state, r] = ocr_lcg_int(state, 10);
      y(t) = y(t - 1);
      if r > 7, y(t) = mod(y(t - 1), nlab) + 1; end  % mostly stay, sometimes step
    end
    for j = 1:nfeat
      [state, u] = ocr_lcg_unit(state);
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
