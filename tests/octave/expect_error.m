function err = expect_error(f, id, part)
%EXPECT_ERROR Runs f() and checks it raises the error `id` whose message contains `part`.
err = [];
try
  f();
catch e
  err = e;
end
if isempty(err)
  check(false, 'no error raised (expected %s: %s)', id, part);
  return;
end
check(strcmp(err.identifier, id), 'identifier ''%s'', expected ''%s'' (message: %s)', ...
      err.identifier, id, err.message);
check(~isempty(strfind(err.message, part)), 'message ''%s'' lacks ''%s''', err.message, part);
end
