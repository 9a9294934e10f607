function [state, k] = ocr_lcg_int(state, n)
%OCR_LCG_INT A uniform integer in 1..n of the same generator.
[state, u] = ocr_lcg_unit(state);
k = floor(u * n) + 1;
end
