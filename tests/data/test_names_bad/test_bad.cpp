TEST_CASE("one; two", "[x]") {}
TEST_CASE("same", "[x]") {}
TEST_CASE("same", "[y]") {}
