function err = chain_letter_error(param, w, xs, ys)
%CHAIN_LETTER_ERROR The letter error of plain Viterbi predictions at w.
wrong = 0; total = 0;
model = struct('w', w);
for i = 1:numel(xs)
  y = chain_oracle(param, model, xs{i}, []);
  wrong = wrong + sum(y ~= ys{i});
  total = total + numel(y);
end
err = wrong / total;
end
