function [W, stat] = pp_bmrm(data, risk, lambda, options)
%PP_BMRM Proximal BMRM (flandmark's pp_bmrm), over bmrm.
%
%   [W, stat] = pp_bmrm(data, risk, lambda)
%   [W, stat] = pp_bmrm(data, risk, lambda, options)
%
% The toolbox's signature and options (TolRel, TolAbs, MaxIter, verb,
% BufSize, K, W, CleanICP, CleanAfter, Tmax, ...: see bmrm.m), K defaulting
% to the toolbox's 0.4, and options.Algorithm = 'proxbmrm'. risk may have the
% toolbox's fourth output (its timings), which is not used.
if nargin < 4 || isempty(options)
  options = struct();
end
if isfield(options, 'Algorithm')
  error('bmrm:badArgument', 'pp_bmrm: options.Algorithm is ''proxbmrm'' here (call bmrm for another)');
end
if ~isfield(options, 'K') || isempty(options.K)
  options.K = 0.4;   % the toolbox's default step bound
end
options.Algorithm = 'proxbmrm';
[W, stat] = bmrm(data, risk, lambda, options);
end
