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
if nargin < 4 || isempty(options)
  options = struct();
end
if isfield(options, 'Algorithm')
  error('bmrm:badArgument', 'parbmrm: options.Algorithm is ''pbmrm'' here (call bmrm for another)');
end
if ~iscell(data)
  data = {data};   % the toolbox's parallel codes take one block too
end
options.Algorithm = 'pbmrm';
[W, stat] = bmrm(data, risk, lambda, options);
end
