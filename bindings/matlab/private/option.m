function v = option(options, name, default)
%OPTION options.(name) when it is set and non-empty, else default.
if isfield(options, name) && ~isempty(options.(name))
  v = options.(name);
else
  v = default;
end
end
