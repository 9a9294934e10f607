% The OCR demo scripts (examples/matlab/demo_ocr_*.m) run unmodified and
% compared with bcfw.m and BMRM: run by tests/octave.rs next to run_tests.m.
global checks_passed checks_failed
checks_passed = 0;
checks_failed = 0;
here = fileparts(mfilename('fullpath'));
addpath(fullfile(fileparts(fileparts(here)), 'bindings', 'matlab'));
if ~isempty(getenv('BMRM_MEX_DIR'))
  addpath(getenv('BMRM_MEX_DIR'));
end
ocr_demos;
fprintf('%d passed, %d failed\n', checks_passed, checks_failed);
if checks_failed > 0
  exit(1);
end
