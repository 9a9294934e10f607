function rethrow_mex(err)
%RETHROW_MEX Rethrows an error of bmrm_mex as bmrm's: Octave prefixes the
% MEX's name, which is dropped, and an error without an identifier gets
% 'bmrm:error'.
msg = regexprep(err.message, '^bmrm_mex: ', '');
id = err.identifier;
if isempty(id)
  id = 'bmrm:error';
end
error(id, '%s', msg);
end
