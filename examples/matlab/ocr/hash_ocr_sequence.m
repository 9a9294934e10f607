function key = hash_ocr_sequence(label)
%HASH_OCR_SEQUENCE gapBCFW's one-argument hashFn: a word's labels 1..26 as
% the letters 'a'..'z'.
key = char(double('a') - 1 + label(:)');
end
