function [W, stat] = parbmrm(data, risk, lambda, options)
%PARBMRM Parallel BMRM (flandmark's parbmrm): one cutting-plane model per block of data, over bmrm.
%
%   [W, stat] = parbmrm(data, risk, lambda)
%   [W, stat] = parbmrm(data, risk, lambda, options)
%
% The toolbox's signature and options (TolRel, TolAbs, MaxIter, verb,
% BufSize, K, W, CleanICP, CleanAfter, Tmax, ...: see bmrm.m), with
% options.Algorithm = 'pbmrm'. risk may have the toolbox's fourth output
% (its timings), which is not used.
if nargin < 4
  options = struct();
end
[W, stat] = toolbox_bmrm('parbmrm', 'pbmrm', data, risk, lambda, options);
end
