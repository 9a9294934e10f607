function [W, stat] = pp_pbmrm(data, risk, lambda, options)
%PP_PBMRM Proximal parallel BMRM (flandmark's pp_pbmrm), over bmrm.
%
%   [W, stat] = pp_pbmrm(data, risk, lambda)
%   [W, stat] = pp_pbmrm(data, risk, lambda, options)
%
% The toolbox's signature and options (TolRel, TolAbs, MaxIter, verb,
% BufSize, K, W, CleanICP, CleanAfter, Tmax, ...: see bmrm.m), K defaulting
% to the toolbox's 0.4, and options.Algorithm = 'proxpbmrm'. risk may have the
% toolbox's fourth output (its timings), which is not used.
if nargin < 4 || isempty(options)
  options = struct();
end
if isfield(options, 'Algorithm')
  error('bmrm:badArgument', 'pp_pbmrm: options.Algorithm is ''proxpbmrm'' here (call bmrm for another)');
end
if ~iscell(data)
  data = {data};   % the toolbox's parallel codes take one block too
end
if ~isfield(options, 'K') || isempty(options.K)
  options.K = 0.4;   % the toolbox's default step bound
end
options.Algorithm = 'proxpbmrm';
[W, stat] = bmrm(data, risk, lambda, options);
end
