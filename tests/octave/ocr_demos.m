% Runs the two OCR demo scripts of examples/matlab unmodified (gapBCFW's and
% BCFWstruct's style) and compares each with bcfw.m on the same problem.
% Run from run_tests.m.
here_tests = fileparts(mfilename('fullpath'));
examples = fullfile(fileparts(fileparts(here_tests)), 'examples', 'matlab');

run(fullfile(examples, 'demo_ocr_gapbcfw.m'));
lam = options.lambda;
check(progress.verifiedGap(end) <= options.gap_threshold, 'OCR gapBCFW demo converged: gap %g', progress.verifiedGap(end));
p2 = rmfield(param, {'n', 'd', 'using_sparse_features'});
p2.hashFn = @(p, y) hash_ocr_sequence(y);
[mb, pb] = bcfw(p2, struct('lambda', lam, 'gap_threshold', options.gap_threshold, 'num_passes', 30, ...
                           'maxCacheSize', 100));
check(isequal(mb.w, model.w) && mb.ell == model.ell, 'OCR: solver_BCFW_hybrid = bcfw.m (w and ell)');
[~, sb] = bcfw(p2, struct('lambda', lam, 'algorithm', 'bmrm', 'TolRel', 1e-3));
dual = model.ell - 0.5 * lam * (model.w' * model.w);
check(dual <= sb.primal(end) + 1e-12, 'OCR gapBCFW: dual %.10g <= BMRM primal %.10g', dual, sb.primal(end));
check(pb.primal(end) >= sb.dual(end) - 1e-12, 'OCR: BCFW primal above BMRM bound');
fprintf('bcfw OCR gapBCFW demo: %d words, dual %.8f, BMRM [%.8f, %.8f]\n', param.n, dual, sb.dual(end), sb.primal(end));

run(fullfile(examples, 'demo_ocr_bcfwstruct.m'));
dual = model.ell - 0.5 * lam * (model.w' * model.w);
check(abs(dual - progress.dual(end)) <= 1e-10 && dual <= sb.primal(end) + 1e-12, ...
      'OCR BCFWstruct: averaged ell gives dual %.10g <= BMRM primal %.10g', dual, sb.primal(end));
check(all(progress.primal >= sb.dual(end) - 1e-12), 'OCR BCFWstruct: primal above BMRM''s bound');
[mf, pf] = bcfw(param, struct('lambda', lam, 'num_passes', 10, 'gap_threshold', 0.1, 'sample', 'uniform', ...
                              'stepType', 1, 'useCache', 0, 'do_weighted_averaging', 1, ...
                              'quit_passes_heuristic_gap', false));
check(isequal(mf.w, model.w), 'OCR: solverBCFW = bcfw.m with BCFWstruct''s defaults');
fprintf('bcfw OCR BCFWstruct demo: primal %.8f dual %.8f, test error %.3f\n', progress.primal(end), dual, ...
        progress.test_error(end));
