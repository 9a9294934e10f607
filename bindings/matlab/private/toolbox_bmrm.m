function [W, stat] = toolbox_bmrm(who, algorithm, data, risk, lambda, options)
%TOOLBOX_BMRM The shared body of the toolbox's named solvers (parbmrm,
% pp_bmrm, pp_pbmrm): bmrm with options.Algorithm fixed to algorithm, one
% block of data wrapped in a cell for the parallel ones, and options.K
% defaulting to the toolbox's 0.4 for the proximal ones.
if isempty(options)
  options = struct();
end
if isfield(options, 'Algorithm')
  error('bmrm:badArgument', '%s: options.Algorithm is ''%s'' here (call bmrm for another)', ...
        who, algorithm);
end
if any(strcmp(algorithm, {'pbmrm', 'proxpbmrm'})) && ~iscell(data)
  data = {data};   % the toolbox's parallel codes take one block too
end
if any(strcmp(algorithm, {'proxbmrm', 'proxpbmrm'})) && ...
    (~isfield(options, 'K') || isempty(options.K))
  options.K = 0.4;   % the toolbox's default step bound
end
options.Algorithm = algorithm;
[W, stat] = bmrm(data, risk, lambda, options);
end
