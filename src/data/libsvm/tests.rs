use super::*;

fn parse_str(s: &str) -> Result<LibsvmData> {
    parse(s.as_bytes(), "t.svm")
}

fn message(s: &str) -> String {
    match parse_str(s) {
        Err(Error {
            kind: crate::ErrorKind::InvalidArgument,
            message: m,
            ..
        }) => m,
        other => panic!("expected an error for {s:?}, got {other:?}"),
    }
}

#[test]
fn reads_labels_comments_qid_and_blank_lines() {
    let d =
        parse_str("# header comment\n+1 1:1 4:-2.5e0\r\n\n-1\t2:3 # trailing\n1.0 qid:3 3:0 4:1\n")
            .unwrap();
    assert_eq!(d.num_examples(), 3);
    assert_eq!(d.num_features, 4);
    assert_eq!(d.labels.names(), &["-1", "1"]);
    assert_eq!(d.classes, vec![1, 0, 1]);
    // Explicit zeros are not stored, but count for num_features.
    assert_eq!(d.row_ptr, vec![0, 2, 3, 4]);
    assert_eq!(d.col, vec![0, 3, 1, 3]);
    assert_eq!(d.val, vec![1.0, -2.5, 3.0, 1.0]);
    assert_eq!(
        d.to_dense(4),
        vec![1.0, 0.0, 0.0, -2.5, 0.0, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    );
    // Narrower: features beyond d dropped; wider: padded.
    assert_eq!(d.to_dense(2), vec![1.0, 0.0, 0.0, 3.0, 0.0, 0.0]);
    assert_eq!(d.to_dense(5).len(), 15);
}

#[test]
fn labels_are_sorted_numerically_and_mapped_back() {
    let d = parse_str("10 1:1\n2 1:1\n-3 1:1\n2.0 1:1\n").unwrap();
    assert_eq!(d.labels.names(), &["-3", "2", "10"]);
    assert_eq!(d.classes, vec![2, 1, 0, 1]);
    let other = LabelMap::from_names(&["2", "10"]).unwrap();
    assert_eq!(d.classes_in(&other), vec![Some(1), Some(0), None, Some(0)]);
    assert_eq!(LabelMap::from_names(&["10", "-3", "2"]).unwrap(), d.labels);
    assert!(LabelMap::from_names(&["1", "1.0"]).is_err());
    assert!(LabelMap::from_names(&["a"]).is_err());
}

#[test]
fn malformed_input_names_line_and_column() {
    let cases: &[(&str, &str)] = &[
        ("1 1:1\nx 1:1\n", "line 2, column 1: the label \"x\""),
        (
            "1 1:1\n1:1 2:2\n",
            "line 2, column 1: the line starts with \"1:1\"",
        ),
        (
            "1 1:1 2\n",
            "line 1, column 7: \"2\" is not an index:value pair",
        ),
        (
            "1 0:1\n",
            "line 1, column 3: \"0:1\": feature indices are 1-based",
        ),
        ("1 a:1\n", "line 1, column 3: \"a:1\": the index \"a\""),
        ("1 -2:1\n", "line 1, column 3: \"-2:1\": the index \"-2\""),
        (
            "1 3:1 2:1\n",
            "line 1, column 7: \"2:1\": index 2 after index 3",
        ),
        (
            "1 2:1 2:1\n",
            "line 1, column 7: \"2:1\": index 2 after index 2",
        ),
        (
            "1  2:abc\n",
            "line 1, column 6: \"2:abc\": the value \"abc\" is not a number",
        ),
        (
            "1 2:nan\n",
            "line 1, column 5: \"2:nan\": the value \"nan\" is NaN",
        ),
        (
            "1 2:1e99\n",
            "line 1, column 5: \"2:1e99\": the value \"1e99\" is inf",
        ),
        (
            "1 qid:x 1:1\n",
            "line 1, column 3: \"qid:x\": a qid must be",
        ),
        (
            "1 1:1 qid:2\n",
            "line 1, column 7: \"qid:2\": qid must come right after",
        ),
        (
            "inf 1:1\n",
            "line 1, column 1: the label \"inf\" is not a finite number",
        ),
        ("+-1 1:1\n", "line 1, column 1: the label \"+-1\""),
        ("# only a comment\n\n", "no examples"),
    ];
    for (text, want) in cases {
        let m = message(text);
        assert!(m.starts_with("libsvm file t.svm"), "{m}");
        assert!(m.contains(want), "for {text:?}:\n  got  {m}\n  want {want}");
    }
    // Columns count characters, not bytes.
    let m = message("1 é:1\n");
    assert!(m.contains("line 1, column 3"), "{m}");
}

#[test]
fn files_plain_and_gzipped_round_trip_through_write_dense() {
    let dir = tempfile::tempdir().unwrap();
    let x = vec![0.5f32, 0.0, 1.0 / 3.0, 0.0, 0.0, 0.0, -7.25, 1e-7, 0.0];
    let y = ["3", "1", "3"];
    let plain = dir.path().join("a.svm");
    write_dense(File::create(&plain).unwrap(), &x, 3, &y).unwrap();
    let d = read(&plain).unwrap();
    assert_eq!(d.to_dense(3), x);
    assert_eq!(d.labels.names(), &["1", "3"]);
    assert_eq!(d.classes, vec![1, 0, 1]);

    let gz = dir.path().join("a.svm.gz");
    let mut enc =
        flate2::write::GzEncoder::new(File::create(&gz).unwrap(), flate2::Compression::fast());
    enc.write_all(&std::fs::read(&plain).unwrap()).unwrap();
    enc.finish().unwrap();
    assert_eq!(read(&gz).unwrap(), d);

    let missing = dir.path().join("missing.svm");
    let m = read(&missing).unwrap_err().to_string();
    assert!(
        m.contains("missing.svm") && m.contains("cannot open"),
        "{m}"
    );

    let rows = d.to_sparse_rows(3).unwrap();
    assert_eq!(rows.nnz(), 4);
    assert_eq!(rows.row(2), (&[0u32, 1][..], &[-7.25f32, 1e-7][..]));
    let narrow = d.to_sparse_rows(1).unwrap();
    assert_eq!(narrow.nnz(), 2);
    assert_eq!(narrow.num_cols(), 1);

    let mut d2 = d.clone();
    d2.truncate(2);
    assert_eq!(d2.num_examples(), 2);
    assert_eq!(d2.to_dense(3), x[..6].to_vec());
}

#[test]
fn a_line_longer_than_the_bound_is_an_error_naming_it() {
    // A line is read only up to the bound (here 16 bytes).
    let ok = "1 1:0.5 2:0.25\n"; // 15 bytes with its end
    let d = parse_bounded(ok.as_bytes(), "f", 15).unwrap();
    assert_eq!(d.num_examples(), 1);
    let text = format!("{ok}2 1:0.125 2:0.0625 3:1\n");
    let e = parse_bounded(text.as_bytes(), "f", 16).unwrap_err();
    assert!(
        e.message.contains("f, line 2") && e.message.contains("longer than 16 bytes"),
        "{e}"
    );
    // A stream without line breaks: read up to the bound only.
    let endless = std::io::repeat(0u8);
    let e = parse_bounded(std::io::BufReader::new(endless), "zeros", 1 << 20).unwrap_err();
    assert!(
        e.message.contains("line 1") && e.message.contains("longer than"),
        "{e}"
    );
}
