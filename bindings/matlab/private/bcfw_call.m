function [model, prog, state] = bcfw_call(who, param, o)
%BCFW_CALL The MEX gateway for the BCFW front ends; errors keep their
% identifier and name the calling front end.
try
  [model, prog, state] = bmrm_mex('bcfw', param, o);
catch err
  msg = regexprep(err.message, '^bmrm_mex: (bcfw: )?', '');
  id = err.identifier;
  if isempty(id)
    id = 'bmrm:error';
  end
  error(id, '%s: %s', who, msg);
end
end
