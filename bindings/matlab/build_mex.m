function build_mex(outdir)
%BUILD_MEX Builds bmrm_mex, the MEX gateway of bmrm.m and bcfw.m.
%
%   build_mex          builds into bindings/matlab (next to bmrm.m)
%   build_mex(outdir)  builds into outdir
%
% In MATLAB it calls mex, in GNU Octave mkoctfile --mex. It links the static
% library target/release/libbmrm.a of the project (the environment variable
% BMRM_LIB may name another libbmrm.a); when the library is missing it runs
% `cargo build --release --lib` in the project root first. Run it from
% anywhere, e.g. from the project root:
%
%   addpath bindings/matlab; build_mex
%
% Octave builds add bmrm_octave_feval.cc, which catches the C++ exceptions
% Octave uses for errors and Ctrl-C (see the comment at its top).

here = fileparts(mfilename('fullpath'));
root = fileparts(fileparts(here));
if nargin < 1 || isempty(outdir)
  outdir = here;
end
if ~exist(outdir, 'dir')
  mkdir(outdir);
end

lib = getenv('BMRM_LIB');
if isempty(lib)
  lib = fullfile(root, 'target', 'release', 'libbmrm.a');
  if ~exist(lib, 'file')
    fprintf('build_mex: %s is missing; running cargo build --release --lib\n', lib);
    [status, out] = system(sprintf('cd "%s" && cargo build --release --lib 2>&1', root));
    if status ~= 0 || ~exist(lib, 'file')
      error('bmrm:build', 'build_mex: cargo build --release --lib failed:\n%s', out);
    end
  end
end
if ~exist(lib, 'file')
  error('bmrm:build', 'build_mex: no static library at %s', lib);
end

% The gateway's C files (bmrm_mex.c lists what each holds).
sources = {'bmrm_mex.c', 'mex_gate.c', 'mex_callbacks.c', 'mex_options.c', ...
           'mex_run.c', 'mex_bmrm.c', 'mex_bcfw.c', 'mex_dual.c', 'mex_graph.c'};
gateway = cellfun(@(f) fullfile(here, f), sources, 'UniformOutput', false);
inc = ['-I' fullfile(root, 'include')];
% The system libraries a static Rust library needs (rustc's native-static-libs).
if ismac()
  syslibs = {'-lSystem', '-lc', '-lm'};
else
  syslibs = {'-lpthread', '-ldl', '-lm', '-lrt', '-lutil', '-lgcc_s'};
end

if exist('OCTAVE_VERSION', 'builtin')
  out = fullfile(outdir, 'bmrm_mex.mex');
  args = [{'--mex', '-DBMRM_MEX_OCTAVE', inc}, gateway, ...
          {fullfile(here, 'bmrm_octave_feval.cc'), lib}, syslibs, {'-o', out}];
  [output, status] = mkoctfile(args{:});
  if status ~= 0
    error('bmrm:build', 'build_mex: mkoctfile failed:\n%s', output);
  end
else
  % utIsInterruptPending (Ctrl-C) lives in libut.
  args = [{'-R2017b', inc}, gateway, {lib}, syslibs, {'-lut', '-outdir', outdir, ...
          '-output', 'bmrm_mex'}];
  mex(args{:});
  out = fullfile(outdir, ['bmrm_mex.' mexext()]);
end
fprintf('build_mex: built %s (bmrm %s)\n', out, bmrm_version_of(outdir));
end

function v = bmrm_version_of(outdir)
old = addpath(outdir);
cleanup = onCleanup(@() path(old));
clear bmrm_mex;
v = bmrm_mex('version');
end
