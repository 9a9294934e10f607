function check(cond, varargin)
%CHECK Counts a passed or failed check (global counters of the Octave tests).
global checks_passed checks_failed
if isempty(checks_passed), checks_passed = 0; checks_failed = 0; end
if all(cond(:))
  checks_passed = checks_passed + 1;
else
  checks_failed = checks_failed + 1;
  st = dbstack();
  where = '';
  if numel(st) >= 2, where = sprintf('%s:%d: ', st(2).name, st(2).line); end
  fprintf('FAIL %s%s\n', where, sprintf(varargin{:}));
end
end
