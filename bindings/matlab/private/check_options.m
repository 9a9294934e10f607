function check_options(who, options, known)
%CHECK_OPTIONS An option outside `known` is an error naming it.
if ~isstruct(options) || numel(options) ~= 1
  error('bmrm:badArgument', '%s: options must be a struct', who);
end
names = fieldnames(options);
for k = 1:numel(names)
  if ~any(strcmp(names{k}, known))
    error('bmrm:badArgument', '%s: unknown option ''%s''', who, names{k});
  end
end
end
