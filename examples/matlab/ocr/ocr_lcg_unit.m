function [state, u] = ocr_lcg_unit(state)
%OCR_LCG_UNIT A uniform draw in [0, 1) of a fixed linear congruential generator.
state = mod(state * 1103515245 + 12345, 2^31);
u = state / 2^31;
end
