//! `docs/controllers.md` lists every registered controller's parameters as their declarations
//! give them (`stride_proto::cc::params::markdown_table`); this fails when the page and the
//! declarations disagree. `STRIDE_WRITE_DOCS=1 cargo test -p stride-proto --test params_doc`
//! rewrites the table.

const BEGIN: &str = "<!-- parameter tables: generated from the declarations -->\n";
const END: &str = "<!-- end of the generated tables -->\n";

#[test]
fn the_parameter_page_is_the_declarations() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/controllers.md");
    let page = std::fs::read_to_string(path).expect("docs/controllers.md");
    let (Some(b), Some(e)) = (page.find(BEGIN), page.find(END)) else {
        panic!("docs/controllers.md lacks the generated-table markers");
    };
    let want = stride_proto::cc::params::markdown_table(10.0);
    let have = &page[b + BEGIN.len()..e];
    if have != want {
        if std::env::var_os("STRIDE_WRITE_DOCS").is_some() {
            let new = format!("{}{BEGIN}{want}{END}{}", &page[..b], &page[e + END.len()..]);
            std::fs::write(path, new).expect("write");
        } else {
            panic!(
                "docs/controllers.md differs from the declarations; run \
                 STRIDE_WRITE_DOCS=1 cargo test -p stride-proto --test params_doc"
            );
        }
    }
}
