function unsupported(who, what)
%UNSUPPORTED An accepted option is honoured; one that cannot be is this error.
error('bmrm:unsupported', '%s: %s is not supported by bmrm', who, what);
end
