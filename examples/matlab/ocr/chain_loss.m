function l = chain_loss(param, ytruth, ypred)
%CHAIN_LOSS The Hamming loss divided by the word length.
l = sum(ytruth(:) ~= ypred(:)) / numel(ytruth);
end
