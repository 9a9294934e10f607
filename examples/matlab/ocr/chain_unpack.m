function [E, T, s, e] = chain_unpack(param, w)
%CHAIN_UNPACK w = [emission (nfeat x nlab); transitions (nlab x nlab); start; end].
nf = param.nfeat; K = param.nlab;
E = reshape(w(1:nf * K), nf, K);
o = nf * K;
T = reshape(w(o + 1:o + K * K), K, K);
o = o + K * K;
s = w(o + 1:o + K);
e = w(o + K + 1:o + 2 * K);
end
